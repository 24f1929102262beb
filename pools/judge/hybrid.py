"""The judge's SWAKVPool: a full and a SWA sub-pool, the layer map, the slot mapping, and where
each layer's write lands.

Routing, read from 0.5.23's `swa_memory_pool.py`: a write to a full-attention layer goes to the
full sub-pool at `loc`, in every era (`full_loc` is not read there); a write to a SWA layer goes
to the SWA sub-pool at the slots of the era's rule, `swa_slots(loc, swa_loc)` (pools/judge/eras.py:
translate inside, or the swa_loc the caller gave, asserted). Sub-pools get `layer=None` and the
layer's id inside them; MLA sub-pools get no scales. Translation is the judge's own lookup,
`mapping[loc]` token by token: a negative id counts from the end (so -1 reads the trailing -1)
and an id out of range raises IndexError.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import torch


def translate(mapping: torch.Tensor, loc: torch.Tensor) -> torch.Tensor:
    """mapping[loc] for a 1-D mapping, one slot at a time."""
    table = mapping.tolist()
    size = len(table)
    translated = []
    for slot in loc.reshape(-1).tolist():
        if not -size <= slot < size:
            raise IndexError(f"index {slot} is out of bounds for dimension 0 with size {size}")
        translated.append(table[slot])
    return torch.tensor(translated, dtype=mapping.dtype, device=mapping.device).reshape(loc.shape)


class Route(NamedTuple):
    """Where a global layer lives: its sub-pool, its id there, and whether it is a SWA layer."""

    sub_pool: Any
    local_id: int
    is_swa: bool


class JudgeHybridPool:
    default_sub_pool_class: type  # the era's MHATokenToKVPool, bound by judge_module
    # swa_slots(loc, swa_loc) -> the SWA sub-pool slots of a SWA layer's write: the era's rule,
    # a method of the era's SWA doors (pools/judge/eras.py), which judge_module mixes in.

    def __init__(
        self,
        size: int,
        size_swa: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        swa_attention_layer_ids: list[int],
        full_attention_layer_ids: list[int],
        device: str,
        token_to_kv_pool_class: Optional[type] = None,
        full_kv_pool_class: Optional[type] = None,
        swa_kv_pool_class: Optional[type] = None,
        full_kv_pool_kwargs: Optional[dict] = None,
        swa_kv_pool_kwargs: Optional[dict] = None,
        enable_memory_saver: bool = False,
        **kwargs: Any,
    ):
        # SGLang's attributes, in the order 0.5.23 sets them.
        self.size = size
        self.size_swa = size_swa
        self.dtype = dtype
        self.device = device
        self.layer_num = len(full_attention_layer_ids) + len(swa_attention_layer_ids)
        self.start_layer = 0
        self.page_size = page_size
        # Without kwargs of its own, each sub-pool is an MHA pool of the hybrid's geometry.
        geometry = {
            "page_size": page_size,
            "device": device,
            "enable_memory_saver": enable_memory_saver,
            "head_num": head_num,
            "head_dim": head_dim,
            **kwargs,
        }
        # 0.5.21 on: each side's class of its own (a DSA full side beside an MLA SWA side).
        make = token_to_kv_pool_class or self.default_sub_pool_class
        self.full_kv_pool = (full_kv_pool_class or make)(
            size=size,
            dtype=dtype,
            layer_num=len(full_attention_layer_ids),
            **(full_kv_pool_kwargs or dict(geometry)),
        )
        self.swa_kv_pool = (swa_kv_pool_class or make)(
            size=size_swa,
            dtype=dtype,
            layer_num=len(swa_attention_layer_ids),
            **(swa_kv_pool_kwargs or dict(geometry)),
        )
        self.use_mla = hasattr(self.full_kv_pool, "kv_lora_rank")
        # {global layer id: (local id, is SWA)}, SGLang's own attribute; the SWA ids go last, so
        # a layer named in both lists is a SWA layer, as in SGLang.
        self.layers_mapping: dict[int, tuple[int, bool]] = {}
        sides = ((False, full_attention_layer_ids), (True, swa_attention_layer_ids))
        for is_swa, layer_ids in sides:
            for local_id, global_id in enumerate(layer_ids):
                self.layers_mapping[global_id] = (local_id, is_swa)
        self.full_to_swa_index_mapping: Optional[torch.Tensor] = None

    @property
    def kept_sinks(self) -> set[int]:
        """Its sub-pools' buffers whose reserved slot a write skipped (token_major.MLAJudgePool)."""
        return set().union(
            *(getattr(pool, "kept_sinks", ()) for pool in (self.full_kv_pool, self.swa_kv_pool))
        )

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        self.full_to_swa_index_mapping = full_to_swa_index_mapping

    def translate_loc_from_full_to_swa(self, kv_indices: torch.Tensor) -> torch.Tensor:
        assert self.full_to_swa_index_mapping is not None
        return translate(self.full_to_swa_index_mapping, kv_indices)

    def _route(self, layer_id: int) -> Route:
        local_id, is_swa = self.layers_mapping[layer_id]
        return Route(self.swa_kv_pool if is_swa else self.full_kv_pool, local_id, is_swa)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        route = self._route(layer_id)
        return route.sub_pool.get_key_buffer(route.local_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        route = self._route(layer_id)
        return route.sub_pool.get_value_buffer(route.local_id)

    def _full_layer(self, layer_id: int) -> int:
        """A full layer's id in the full sub-pool; a SWA layer keeps no indexer keys."""
        local_id, is_swa = self.layers_mapping[layer_id]
        assert not is_swa, f"layer {layer_id} is a SWA layer: it has no indexer key cache"
        return local_id

    def set_index_k_scale_buffer(self, layer_id: int, *args: Any, **kwargs: Any) -> None:
        """The full sub-pool's indexer door (a DSA full pool's), the loc as given."""
        self.full_kv_pool.set_index_k_scale_buffer(self._full_layer(layer_id), *args, **kwargs)

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        return self.full_kv_pool.get_index_k_with_scale_buffer(self._full_layer(layer_id))

    def _slots(
        self, route: Route, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]
    ) -> torch.Tensor:
        return self.swa_slots(loc, swa_loc) if route.is_swa else loc

    def _write_kv(
        self,
        layer: Any,
        loc: torch.Tensor,
        swa_loc: Optional[torch.Tensor],
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
    ) -> None:
        route = self._route(layer.layer_id)
        slots = self._slots(route, loc, swa_loc)
        scales = () if self.use_mla else (k_scale, v_scale)
        route.sub_pool.set_kv_buffer(
            None, slots, cache_k, cache_v, *scales, layer_id_override=route.local_id
        )

    def _write_mla(
        self,
        layer: Any,
        loc: torch.Tensor,
        swa_loc: Optional[torch.Tensor],
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
    ) -> None:
        route = self._route(layer.layer_id)
        slots = self._slots(route, loc, swa_loc)  # SGLang asserts swa_loc before the type check
        if not self.use_mla:
            raise TypeError(f"Layer {layer.layer_id} is not backed by an MLA KV pool")
        route.sub_pool.set_mla_kv_buffer(
            None, slots, k_nope, k_rope, layer_id_override=route.local_id
        )
