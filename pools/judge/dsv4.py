"""The judge's DeepSeek V4 main-KV pools, as SGLang 0.5.23's (mem_cache/deepseek_v4_memory_pool.py).

DeepSeekV4SingleKVPool, V4 layout (kernels/ops/kvcache/dsv4_main_kv_store.py SetKAndS):
- a token is 448 fp8 NoPE bytes, 64 bf16 RoPE values (128 bytes) and 7 UE8M0 scale bytes;
- a page of P tokens is `ceil(P * 584 / 576) * 576` bytes: token o's NoPE then RoPE at o * 576,
  its 7 scales at P * 576 + o * 8 (the eighth byte, the scale pad, is never written), the tail
  past P * 584 never written;
- every layer has `ceil((size + global_page_size) / P)` pages; get_key_buffer views a layer's
  bytes as the pool dtype (store uint8, dtype e4m3);
- set_key_buffer(layer_id, loc, pack) asserts int32/int64 locs, an e4m3 / bf16 / uint8 pack of
  one row per loc, contiguous; then one program a token, in token order (the interpreter's order:
  a repeated loc keeps its last token), copies the pack's bytes to slot loc's places. No slot is
  reserved: slot 0 is written like any other. layer_id indexes the pool's list directly.

DeepSeekV4UniformFP8KVPool: a token is 512 e4m3 bytes, pages of P * 512 without padding.
set_key_buffer raises NotImplementedError; set_key_buffer_fused(layer_id, loc, cache_k) asserts
no freqs_cis and a (n, 512) cache_k, then assigns `cache_k.to(e4m3)` bytes at rows loc.long()
of the layer flattened to (slots, 512): torch index assignment (a negative loc counts from the
end, one past the end raises IndexError, a one-row value broadcasts).

HiSparseC4DevicePool: the single pool whose set_key_buffer first translates loc to
`full_to_hisparse_device_index_mapping[loc].to(int32)` (register_mapping keeps the tensor; torch
indexing: a negative id counts from the end, one past the end raises IndexError; before
register_mapping the attribute is missing: AttributeError), then stores there.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from pools.judge.casts import bits_of, cast_bits
from pools.judge.hisparse import HiSparseTranslation
from pools.kinds.composite import DSV4, DSV4_HISPARSE_C4, DSV4_UNIFORM_FP8
from pools.kinds.pool_classes import judge_pool

NOPE, ROPE, TILE = 448, 64, 64
SCALES = NOPE // TILE  # 7 UE8M0 exponents a token
DATA_BYTES = NOPE + 2 * ROPE  # 576: fp8 NoPE then bf16 RoPE
SCALE_STRIDE = SCALES + 1  # a pad byte after each token's scales
TOKEN_BYTES = DATA_BYTES + SCALE_STRIDE  # 584
PAGE_ALIGN = 576
UNIFORM_BYTES = NOPE + ROPE  # 512


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class JudgeDSV4Pool:
    """DeepSeekV4SingleKVPool (V4 layout)."""

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
        self.layer_num = layer_num
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1
        self.qk_nope_head_dim, self.qk_rope_head_dim = qk_nope_head_dim, qk_rope_head_dim
        global_page_size = global_page_size or page_size
        # The paged allocator reserves one page at the global page size.
        self.num_pages = _ceil_div(size + global_page_size, page_size)
        self.kv_cache_total_dim = self._token_bytes()
        self.kv_buffer = [self._new_layer() for _ in range(layer_num)]

    def _token_bytes(self) -> int:
        width = self.qk_nope_head_dim + 2 * self.qk_rope_head_dim
        width += self.qk_nope_head_dim // TILE + 1
        assert width == TOKEN_BYTES, "DSV4 KV layout: 584 bytes/token"
        return width

    def _new_layer(self) -> torch.Tensor:
        page_bytes = _ceil_div(self.page_size * TOKEN_BYTES, PAGE_ALIGN) * PAGE_ALIGN
        return torch.zeros((self.num_pages, page_bytes), dtype=torch.uint8, device=self.device)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.kv_buffer[layer_id - self.start_layer].view(self.dtype)

    def set_kv_buffer(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError()

    def set_key_buffer(self, layer_id: int, loc: torch.Tensor, pack: Any) -> None:
        nope, rope, scale = pack.k_nope_fp8, pack.k_rope_bf16, pack.scale_k_nope_ue8m0
        assert loc.dtype in (torch.int64, torch.int32), f"loc.dtype={loc.dtype}"
        assert loc.dim() == 1 and nope.shape[0] == rope.shape[0] == scale.shape[0] == len(loc)
        assert nope.dtype == torch.float8_e4m3fn and rope.dtype == torch.bfloat16
        assert scale.dtype == torch.uint8
        for tensor in (loc, nope, rope, scale):
            assert tensor.is_contiguous()
        page = self.kv_buffer[layer_id]
        flat = page.view(-1).cpu().numpy().copy()
        page_bytes = page.shape[1]
        nope_bytes = nope.cpu().view(torch.uint8).numpy()
        rope_bytes = bits_of(rope.cpu()).view(np.uint8).reshape(len(loc), 2 * ROPE)
        scale_bytes = scale.cpu().numpy()
        for token, slot in enumerate(loc.cpu().tolist()):
            if not 0 <= slot < self.num_pages * self.page_size:
                raise IndexError(f"loc {slot} outside the pool's {self.num_pages} pages")
            number, offset = divmod(slot, self.page_size)
            data = number * page_bytes + offset * DATA_BYTES
            flat[data : data + NOPE] = nope_bytes[token, :NOPE]
            flat[data + NOPE : data + DATA_BYTES] = rope_bytes[token]
            scales = number * page_bytes + self.page_size * DATA_BYTES + offset * SCALE_STRIDE
            flat[scales : scales + SCALES] = scale_bytes[token, :SCALES]
        page.view(-1).copy_(torch.from_numpy(flat))


class JudgeDSV4UniformFP8Pool(JudgeDSV4Pool):
    """DeepSeekV4UniformFP8KVPool: 512 e4m3 bytes a token, no scales, no page padding."""

    def _token_bytes(self) -> int:
        width = self.qk_nope_head_dim + self.qk_rope_head_dim
        assert width == UNIFORM_BYTES, "DSV4 uniform-FP8 KV layout: 512 bytes/token"
        return width

    def _new_layer(self) -> torch.Tensor:
        shape = (self.num_pages, self.page_size * UNIFORM_BYTES)
        return torch.zeros(shape, dtype=torch.float8_e4m3fn, device=self.device)

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
        assert freqs_cis is None, "the uniform-FP8 pool takes finished (rotated) rows"
        assert cache_k.dim() == 2 and cache_k.shape[1] == UNIFORM_BYTES
        buffer = self.kv_buffer[layer_id]
        rows = buffer.view(torch.uint8).view(-1).cpu().numpy().copy().reshape(-1, UNIFORM_BYTES)
        values = cast_bits(bits_of(cache_k.cpu()), cache_k.dtype, torch.float8_e4m3fn)
        values = values.astype(np.uint8).reshape(cache_k.shape)
        slots = loc.cpu().to(torch.int64).tolist()
        if len(values) not in (1, len(slots)):
            raise RuntimeError(f"shape mismatch: {len(values)} rows for {len(slots)} indices")
        for token, slot in enumerate(slots):
            if not -len(rows) <= slot < len(rows):
                raise IndexError(f"index {slot} is out of bounds for {len(rows)} rows")
            rows[slot] = values[token if len(values) > 1 else 0]
        buffer.view(torch.uint8).view(-1).copy_(torch.from_numpy(rows.reshape(-1)))


class JudgeDSV4HiSparseC4Pool(HiSparseTranslation, JudgeDSV4Pool):
    """HiSparseC4DevicePool: the V4 store at each loc's device slot."""

    unregistered = AttributeError

    def set_key_buffer(self, layer_id: int, loc: torch.Tensor, pack: Any) -> None:
        # Torch indexes the mapping with long or int ids (a byte or bool mask, which no call site
        # passes, is not modelled): any other dtype raises IndexError.
        if isinstance(loc, torch.Tensor) and loc.dtype not in (torch.int32, torch.int64):
            raise IndexError(f"tensors used as indices must be long or int, not {loc.dtype}")
        super().set_key_buffer(layer_id, self._device(loc).to(torch.int32), pack)


judge_pool(DSV4)(lambda module: JudgeDSV4Pool)
judge_pool(DSV4_UNIFORM_FP8)(lambda module: JudgeDSV4UniformFP8Pool)
judge_pool(DSV4_HISPARSE_C4)(lambda module: JudgeDSV4HiSparseC4Pool)
