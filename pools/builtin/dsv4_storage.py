"""The builtin DeepSeek V4 main-KV pools: SGLang's DeepSeekV4SingleKVPool (V4 layout) and
DeepSeekV4UniformFP8KVPool, with vectorised torch stores (docs/pools.md, the DeepSeek V4 kinds).

A V4 page of P tokens holds each token's 448 fp8 NoPE and 64 bf16 RoPE values (576 bytes) at
o * 576, its 7 UE8M0 scale bytes at P * 576 + o * 8, padded to a multiple of 576 bytes; the
uniform-FP8 pool keeps 512 e4m3 bytes a token, pages unpadded.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.hisparse_storage import HiSparseMapping
from pools.kinds.composite import DSV4, DSV4_HISPARSE_C4, DSV4_UNIFORM_FP8
from pools.kinds.pool_classes import builtin_pool

V4_NOPE, V4_ROPE, V4_SCALES = 448, 64, 7
V4_DATA = V4_NOPE + 2 * V4_ROPE
V4_SCALE_SLOT = V4_SCALES + 1
V4_PAGE_ALIGN = 576


class DSV4SingleStorage:
    """DeepSeekV4SingleKVPool's constructor, buffers and set_key_buffer."""

    scale_stride = V4_SCALE_SLOT  # bytes between two tokens' scales: 7 and the pad

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        global_page_size: Optional[int] = None,
        **_: Any,
    ):
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self.layer_num, self.start_layer = layer_num, start_layer or 0
        self.qk_nope_head_dim, self.qk_rope_head_dim = qk_nope_head_dim, qk_rope_head_dim
        reserved = global_page_size or page_size
        pages = (size + reserved + page_size - 1) // page_size
        self.kv_buffer = [self._layer(pages) for _ in range(layer_num)]

    def _layer(self, pages: int) -> torch.Tensor:
        token = self.qk_nope_head_dim + 2 * self.qk_rope_head_dim + self.qk_nope_head_dim // 64 + 1
        assert token == V4_DATA + V4_SCALE_SLOT, "DSV4 KV layout: 584 bytes/token"
        raw = self.page_size * token
        padded = (raw + V4_PAGE_ALIGN - 1) // V4_PAGE_ALIGN * V4_PAGE_ALIGN
        return torch.zeros((pages, padded), dtype=torch.uint8, device=self.device)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.kv_buffer[layer_id - self.start_layer].view(self.dtype)

    def set_kv_buffer(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError()

    def set_key_buffer(self, layer_id: int, loc: torch.Tensor, pack: Any) -> None:
        nope, rope, scale = pack.k_nope_fp8, pack.k_rope_bf16, pack.scale_k_nope_ue8m0
        assert loc.dtype in (torch.int32, torch.int64)
        assert nope.dtype == torch.float8_e4m3fn and rope.dtype == torch.bfloat16
        assert scale.dtype == torch.uint8
        assert len(loc) == len(nope) == len(rope) == len(scale)
        buffer = self.kv_buffer[layer_id]
        flat = buffer.view(-1)
        loc = loc.to(torch.int64)
        page_start = (loc // self.page_size) * buffer.shape[1]
        offset = loc % self.page_size
        data_start = page_start + offset * V4_DATA
        scale_start = page_start + self.page_size * V4_DATA + offset * self.scale_stride
        row = torch.cat([nope.view(torch.uint8), rope.contiguous().view(torch.uint8)], dim=1)
        data_index = data_start[:, None] + torch.arange(V4_DATA, device=loc.device)
        scale_index = scale_start[:, None] + torch.arange(V4_SCALES, device=loc.device)
        # One token after another, as the kernel's programs run: a repeated loc keeps its last.
        for token in range(len(loc)):
            flat[data_index[token]] = row[token]
            flat[scale_index[token]] = scale[token, :V4_SCALES]


class DSV4UniformFP8Storage(DSV4SingleStorage):
    """DeepSeekV4UniformFP8KVPool: set_key_buffer_fused stores `cache_k.to(e4m3)` rows."""

    def _layer(self, pages: int) -> torch.Tensor:
        token = self.qk_nope_head_dim + self.qk_rope_head_dim
        assert token == V4_NOPE + V4_ROPE, "DSV4 uniform-FP8 KV layout: 512 bytes/token"
        self.token_bytes = token
        return torch.zeros(
            (pages, self.page_size * token), dtype=torch.float8_e4m3fn, device=self.device
        )

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.kv_buffer[layer_id]

    def set_key_buffer(self, layer_id: int, loc: torch.Tensor, pack: Any) -> None:
        raise NotImplementedError("the uniform-FP8 pool takes set_key_buffer_fused")

    def set_key_buffer_fused(
        self,
        layer_id: int,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        freqs_cis: Optional[torch.Tensor] = None,
    ) -> None:
        assert freqs_cis is None
        assert cache_k.dim() == 2 and cache_k.shape[1] == self.token_bytes
        rows = self.kv_buffer[layer_id].view(torch.uint8).view(-1, self.token_bytes)
        rows[loc.long()] = cache_k.to(torch.float8_e4m3fn).view(torch.uint8)


class DSV4HiSparseC4Storage(HiSparseMapping, DSV4SingleStorage):
    """HiSparseC4DevicePool: set_key_buffer at full_to_hisparse_device_index_mapping[loc]."""

    unregistered = AttributeError

    def set_key_buffer(self, layer_id: int, loc: torch.Tensor, pack: Any) -> None:
        device_loc = self.translate_loc_to_hisparse_device(loc).to(torch.int32)
        super().set_key_buffer(layer_id, device_loc, pack)


@builtin_pool(DSV4)
def dsv4_pool(module: Any) -> type:
    return type(DSV4.sglang_class, (DSV4SingleStorage,), {})


@builtin_pool(DSV4_UNIFORM_FP8)
def dsv4_uniform_fp8_pool(module: Any) -> type:
    return type(DSV4_UNIFORM_FP8.sglang_class, (DSV4UniformFP8Storage,), {})


@builtin_pool(DSV4_HISPARSE_C4)
def dsv4_hisparse_c4_pool(module: Any) -> type:
    return type(DSV4_HISPARSE_C4.sglang_class, (DSV4HiSparseC4Storage,), {})
