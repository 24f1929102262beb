"""The builtin HybridLinearKVPool (SGLang 0.5.23 memory_pool.py): the KV cache of a hybrid
linear-attention model (Qwen3-Next, a Mamba-style hybrid), whose linear-attention layers keep
state elsewhere (the mamba pool) and whose full-attention layers keep K/V in one dense MHA or MLA
pool, indexed by the layer's place among the full-attention layers.

It serves the current era's call sites only: its set_kv_buffer reads KVWriteLoc.full_loc.
- set_kv_buffer writes at full_loc where one is given, else at loc, with the layer's dense id
  (MHA: scales default to 1.0, passed on; MLA: no scales).
- set_mla_kv_buffer hands the loc_info on unchanged, so it writes at loc whatever full_loc says.
- a layer id that is not a full-attention layer raises ValueError.
- use_dsa: the dense pool is a DSATokenToKVPool; set_index_k_scale_buffer (and its reader) reach
  it with the layer's dense id and the loc as given.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.kinds.hybrid import HYBRID_LINEAR_DSA, HYBRID_LINEAR_MHA, HYBRID_LINEAR_MLA
from pools.kinds.pool_classes import builtin_pool
from pools.write_loc import CurrentWriteLoc, unwrap_current


class HybridLinearStorage:
    # the era's MHATokenToKVPool and MLATokenToKVPool, bound by pools/builtin/sut.py
    mha_pool_class: type
    mla_pool_class: type
    dsa_pool_class: type  # the era's DSATokenToKVPool (the MLA pool with an indexer key cache)

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
        self.size, self.dtype, self.page_size, self.device = size, dtype, page_size, device
        self.start_layer = 0
        self.use_mla, self.use_dsa = use_mla, use_dsa
        self.mamba_pool = mamba_pool
        common = dict(
            size=size,
            page_size=page_size,
            dtype=dtype,
            layer_num=len(full_attention_layer_ids),
            device=device,
            enable_memory_saver=enable_memory_saver,
        )
        if use_mla and use_dsa:
            assert index_head_dim is not None and kv_cache_dim is not None, (
                "HybridLinearKVPool with use_dsa requires index_head_dim and kv_cache_dim"
            )
            self.full_kv_pool = self.dsa_pool_class(
                kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim,
                index_head_dim=index_head_dim, kv_cache_dim=kv_cache_dim, **common,
            )  # fmt: skip
        elif use_mla:
            self.full_kv_pool = self.mla_pool_class(
                kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim, **common
            )
        else:
            self.full_kv_pool = self.mha_pool_class(head_num=head_num, head_dim=head_dim, **common)
        self.full_attention_layer_id_mapping = {
            layer_id: dense for dense, layer_id in enumerate(full_attention_layer_ids)
        }

    def _dense(self, layer_id: int) -> int:
        if layer_id not in self.full_attention_layer_id_mapping:
            raise ValueError(f"layer_id={layer_id} not in full attention layers")
        return self.full_attention_layer_id_mapping[layer_id]

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.full_kv_pool.get_key_buffer(self._dense(layer_id))

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.full_kv_pool.get_value_buffer(self._dense(layer_id))

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
        dense = self._dense(layer.layer_id)
        write_loc = CurrentWriteLoc(
            full_loc if full_loc is not None else loc,
            physical=bool(getattr(loc_info, "physical", False)),
        )
        if self.use_mla:
            self.full_kv_pool.set_kv_buffer(
                None, write_loc, cache_k, cache_v, layer_id_override=dense
            )
        else:
            self.full_kv_pool.set_kv_buffer(
                None, write_loc, cache_k, cache_v, k_scale, v_scale, layer_id_override=dense
            )

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        if not self.use_mla:
            raise AssertionError("set_mla_kv_buffer called when use_mla is False")
        self.full_kv_pool.set_mla_kv_buffer(
            None,
            loc_info,
            cache_k_nope,
            cache_k_rope,
            layer_id_override=self._dense(layer.layer_id),
        )

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        assert self.use_dsa, "set_index_k_scale_buffer called when use_dsa is False"
        self.full_kv_pool.set_index_k_scale_buffer(
            self._dense(layer_id), loc, index_k, index_k_scale
        )

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        assert self.use_dsa, "get_index_k_with_scale_buffer called when use_dsa is False"
        return self.full_kv_pool.get_index_k_with_scale_buffer(self._dense(layer_id))


@builtin_pool(HYBRID_LINEAR_MHA, HYBRID_LINEAR_MLA, HYBRID_LINEAR_DSA)
def hybrid_linear_pool(module: Any) -> type:
    return type(
        "HybridLinearKVPool",
        (HybridLinearStorage,),
        {
            "mha_pool_class": module.MHATokenToKVPool,
            "mla_pool_class": module.MLATokenToKVPool,
            "dsa_pool_class": module.DSATokenToKVPool,
        },
    )
