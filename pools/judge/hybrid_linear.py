"""The judge's HybridLinearKVPool, as SGLang 0.5.23's (mem_cache/memory_pool.py): full-attention
layers in one dense MHA or MLA pool of len(full_attention_layer_ids) layers, a layer reached by
its index in that list (`full_attention_layer_id_mapping`); linear-attention layers have no KV
here (their state is the mamba pool's, None on this machine).

- set_kv_buffer(layer, loc_info, k, v, k_scale=1.0, v_scale=1.0): unwraps (loc, _, full_loc) and
  writes at full_loc when it is not None, else at loc, through a fresh KVWriteLoc carrying only
  that loc and the physical mark; MHA hands on the scales and the dense id as the override, MLA
  (use_mla) writes the latent row with no scales.
- set_mla_kv_buffer(layer, loc_info, nope, rope): asserts use_mla, hands loc_info on as it came,
  so full_loc is ignored there.
- any door or buffer of a layer id outside the mapping raises ValueError.
- use_dsa (with use_mla): the dense pool is a DSATokenToKVPool (pools/judge/dsa_index.py);
  set_index_k_scale_buffer asserts use_dsa and hands the dense id and the loc as given on.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.kinds.hybrid import HYBRID_LINEAR_DSA, HYBRID_LINEAR_MHA, HYBRID_LINEAR_MLA
from pools.kinds.pool_classes import judge_pool
from pools.write_loc import CurrentWriteLoc, unwrap_current


class JudgeHybridLinearPool:
    mha_pool_class: type  # the judge's MHATokenToKVPool and MLATokenToKVPool of the era
    mla_pool_class: type
    dsa_pool_class: type  # and its DSATokenToKVPool

    def __init__(
        self,
        size: int,
        dtype: torch.dtype,
        page_size: int,
        head_num: int,
        head_dim: int,
        full_attention_layer_ids: list[int],
        device: str,
        mamba_pool: Any = None,
        enable_memory_saver: bool = False,
        use_mla: bool = False,
        kv_lora_rank: Optional[int] = None,
        qk_rope_head_dim: Optional[int] = None,
        use_dsa: bool = False,
        index_head_dim: Optional[int] = None,
        kv_cache_dim: Optional[int] = None,
        **_ignored: Any,
    ):
        self.size = size
        self.dtype = dtype
        self.page_size = page_size
        self.device = device
        self.start_layer = 0
        self.mamba_pool = mamba_pool
        self.use_mla = use_mla
        self.use_dsa = use_dsa
        layers = len(full_attention_layer_ids)
        if use_mla and use_dsa:
            if index_head_dim is None or kv_cache_dim is None:
                raise AssertionError("use_dsa requires index_head_dim and kv_cache_dim")
            shape = {"kv_lora_rank": kv_lora_rank, "qk_rope_head_dim": qk_rope_head_dim}
            shape.update(index_head_dim=index_head_dim, kv_cache_dim=kv_cache_dim)
            shape.update(enable_memory_saver=enable_memory_saver)
            pool_class = self.dsa_pool_class
        elif use_mla:
            shape = {"kv_lora_rank": kv_lora_rank, "qk_rope_head_dim": qk_rope_head_dim}
            pool_class = self.mla_pool_class
        else:
            shape = {"head_num": head_num, "head_dim": head_dim}
            pool_class = self.mha_pool_class
        self.full_kv_pool = pool_class(
            size=size, page_size=page_size, dtype=dtype, layer_num=layers, device=device, **shape
        )
        self.full_attention_layer_id_mapping = {}
        for index, layer_id in enumerate(full_attention_layer_ids):
            self.full_attention_layer_id_mapping[layer_id] = index

    @property
    def kept_sinks(self) -> set[int]:
        """Its dense pool's buffers whose reserved slot a write skipped."""
        return set(getattr(self.full_kv_pool, "kept_sinks", ()))

    def _transfer_full_attention_id(self, layer_id: int) -> int:
        try:
            return self.full_attention_layer_id_mapping[layer_id]
        except KeyError:
            raise ValueError(
                f"layer_id={layer_id} not in full attention layers: "
                f"{self.full_attention_layer_id_mapping.keys()}"
            ) from None

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.full_kv_pool.get_key_buffer(self._transfer_full_attention_id(layer_id))

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.full_kv_pool.get_value_buffer(self._transfer_full_attention_id(layer_id))

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        loc, _, full_loc = unwrap_current(loc_info)
        local_id = self._transfer_full_attention_id(layer.layer_id)
        target = loc if full_loc is None else full_loc
        physical = isinstance(loc_info, CurrentWriteLoc) and loc_info.physical
        write_loc = CurrentWriteLoc(target, physical=physical)
        if self.use_mla:
            scales: tuple = ()
        else:
            scales = (k_scale, v_scale)
        self.full_kv_pool.set_kv_buffer(
            None, write_loc, cache_k, cache_v, *scales, layer_id_override=local_id
        )

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        assert self.use_mla, "set_mla_kv_buffer called when use_mla is False"
        local_id = self._transfer_full_attention_id(layer.layer_id)
        self.full_kv_pool.set_mla_kv_buffer(
            None, loc_info, cache_k_nope, cache_k_rope, layer_id_override=local_id
        )

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if not self.use_dsa:
            raise AssertionError("set_index_k_scale_buffer called when use_dsa is False")
        local_id = self._transfer_full_attention_id(layer_id)
        self.full_kv_pool.set_index_k_scale_buffer(local_id, loc, index_k, index_k_scale)

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        local_id = self._transfer_full_attention_id(layer_id)
        return self.full_kv_pool.get_index_k_with_scale_buffer(local_id)


@judge_pool(HYBRID_LINEAR_MHA, HYBRID_LINEAR_MLA, HYBRID_LINEAR_DSA)
def hybrid_linear_judge(module) -> type:
    return type(
        "HybridLinearKVPool",
        (JudgeHybridLinearPool,),
        {
            "mha_pool_class": module.MHATokenToKVPool,
            "mla_pool_class": module.MLATokenToKVPool,
            "dsa_pool_class": module.DSATokenToKVPool,
        },
    )
