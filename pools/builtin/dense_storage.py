"""Buffers and byte movement shared by every era: the part of a pool that no API change touched.

Era modules (pools/builtin/eras/) subclass these and add SGLang's `set_kv_buffer` signatures; the
bytes always go through `self.engine`, a StoreEngine bound by pools.builtin.sut.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.engines.base import Scale, StoreEngine
from pools.dtypes import store_dtype_of


def _layer_index(layer: Any, layer_id_override: Optional[int]) -> int:
    return layer_id_override if layer_id_override is not None else layer.layer_id


class TokenPoolStorage:
    engine: StoreEngine  # bound per builtin module, see pools.builtin.sut

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
    ):
        self.size = size
        self.page_size = page_size
        self.dtype = dtype
        self.store_dtype = store_dtype_of(dtype)
        self.layer_num = layer_num
        self.device = device
        self.start_layer = start_layer or 0
        self.end_layer = end_layer if end_layer is not None else layer_num - 1
        if self.engine.devices is not None and torch.device(device).type not in self.engine.devices:
            raise ValueError(f"engine {self.engine.name!r} runs only on {self.engine.devices}")

    def _rows(self, *row_shape: int) -> list[torch.Tensor]:
        # size + page_size rows: slot 0 is the padding sink and allocators hand out [1, size].
        return [
            torch.zeros(
                (self.size + self.page_size, *row_shape), dtype=self.store_dtype, device=self.device
            )
            for _ in range(self.layer_num)
        ]


class MHAStorage(TokenPoolStorage):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        v_head_dim: Optional[int] = None,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        **_ignored: Any,
    ):
        super().__init__(
            size, page_size, dtype, layer_num, device, enable_memory_saver, start_layer, end_layer
        )
        self.head_num = head_num
        self.head_dim = head_dim
        self.v_head_dim = v_head_dim if v_head_dim is not None else head_dim
        self._create_buffers()

    def _create_buffers(self) -> None:
        """A hook for other layouts (pools/builtin/layouts, pools/builtin/fp4), as SGLang's
        _create_buffers."""
        self.k_buffer = self._rows(self.head_num, self.head_dim)
        self.v_buffer = self._rows(self.head_num, self.v_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.k_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.v_buffer[layer_id - self.start_layer])

    def _view(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.view(self.dtype) if self.store_dtype != self.dtype else buffer

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        layer_id_override: Optional[int],
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        self.engine.store_kv(
            self.k_buffer[index],
            self.v_buffer[index],
            loc,
            cache_k,
            cache_v,
            k_scale,
            v_scale,
            self.dtype,
            self.store_dtype,
        )

    def _store_masked(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        mask: torch.Tensor,
    ) -> None:
        """A DCP rank's write (SGLang 0.5.23, dcp_kv_mask): every token divided and cast as an
        unmasked write's, then only the tokens the mask keeps stored."""
        if cache_k.dtype != self.dtype:  # in place, on the caller's tensors, as the door does
            if k_scale is not None:
                cache_k.div_(k_scale)
            if v_scale is not None:
                cache_v.div_(v_scale)
        kept = mask[: cache_k.shape[0]] != 0
        # The kept rows, divided already, reach the store without scales: it only casts them.
        self._store(
            layer, loc[: cache_k.shape[0]][kept], cache_k[kept], cache_v[kept], None, None, None
        )

    def set_kv_buffer_prefix_valid(
        self,
        layer: Any,
        loc_2d: torch.Tensor,
        commit_lens: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale = None,
        v_scale: Scale = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        """SGLang 0.5.23's CPU path of a draft's commit: the first commit_lens[r] tokens of each
        row of loc_2d go through set_kv_buffer, their k/v rows selected (copied) first."""
        if loc_2d.ndim != 2 or commit_lens.ndim != 1 or commit_lens.shape[0] != loc_2d.shape[0]:
            raise ValueError("loc_2d must be rank-2 and commit_lens one length per row of it")
        if cache_k.shape[0] != loc_2d.numel() or cache_v.shape[0] != loc_2d.numel():
            raise ValueError("KV rows must match loc_2d size")
        offsets = torch.arange(loc_2d.shape[1], device=loc_2d.device)
        valid = (offsets[None, :] < commit_lens.to(torch.int64)[:, None]).reshape(-1)
        picked = torch.nonzero(valid).flatten()
        if picked.numel() == 0:
            return
        layer_id = _layer_index(layer, layer_id_override)
        self.set_kv_buffer(
            layer,
            loc_2d.reshape(-1).index_select(0, picked),
            cache_k.index_select(0, picked),
            cache_v.index_select(0, picked),
            k_scale,
            v_scale,
            layer_id_override=layer_id,
        )


class MLAStorage(TokenPoolStorage):
    reserved_skip_index = 0  # as SGLang's MLA store: the slot padding tokens point at

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        kv_lora_rank: int,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        dcp_size: int = 1,
        dcp_rank: int = 0,
        **_ignored: Any,
    ):
        super().__init__(
            size, page_size, dtype, layer_num, device, enable_memory_saver, start_layer, end_layer
        )
        # A decode-context-parallel rank's pool (SGLang 0.5.23 reads the group from its
        # runtime's parallel context), whose doors take every rank's global token ids.
        self.dcp_size, self.dcp_rank = dcp_size, dcp_rank
        self.kv_lora_rank = kv_lora_rank
        self.qk_rope_head_dim = qk_rope_head_dim
        self.kv_cache_dim = kv_lora_rank + qk_rope_head_dim
        self._create_buffers()

    def _create_buffers(self) -> None:
        self.kv_buffer = self._rows(1, self.kv_cache_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        buffer = self.kv_buffer[layer_id - self.start_layer]
        return buffer.view(self.dtype) if self.store_dtype != self.dtype else buffer

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.get_key_buffer(layer_id)[..., : self.kv_lora_rank]

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        if self.dcp_size > 1:  # as SGLang 0.5.23's combined-row door, which has no rank's rule
            raise AssertionError("MLATokenToKVPool.set_kv_buffer has no DCP-aware write path")
        index = _layer_index(layer, layer_id_override) - self.start_layer
        self.engine.store_rows(self.kv_buffer[index], loc, cache_k, self.dtype, self.store_dtype)

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        rope = k_rope is not None and k_rope.numel() > 0
        if (rope or self.dcp_size > 1) and k_nope.shape[0] == loc.shape[0]:
            # As SGLang's MLA store: a loc equal to reserved_skip_index (slot 0, where CUDA-graph
            # padding points) is dropped when a rope part is written; a DCP rank then keeps the
            # global ids it owns (id % dcp_size == dcp_rank) at row id // dcp_size.
            written = torch.ones_like(loc, dtype=torch.bool)
            if rope:
                written &= loc != self.reserved_skip_index
            if self.dcp_size > 1:
                written &= loc % self.dcp_size == self.dcp_rank
            loc = loc[written] // self.dcp_size
            k_nope = k_nope[written]
            k_rope = k_rope[written] if rope else k_rope
        self.engine.store_nope_rope(
            self.kv_buffer[index], loc, k_nope, k_rope, self.dtype, self.store_dtype
        )
