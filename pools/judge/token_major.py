"""The judge's token-major pools: buffers and what SGLang's MHA and MLA pools do with a write.

MHA (`_store`): when the caller's k is not already in the pool dtype, divide k then v in place by
their scales (None: no division), then cast each to the pool dtype and store its bit patterns
row by row. MLA (`_store_rows`, `_store_nope_rope`): no scales; cast and store the latent row,
or nope and rope side by side. Buffers are torch tensors (what the harness and the backends
read, `get_key_buffer` a live view); every write goes through pools.judge.token_writes on NumPy
views.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from pools.dtypes import store_dtype_of
from pools.judge.casts import bits_of, bits_view, cast_bits
from pools.judge.divide import divide_in_place
from pools.judge.token_writes import UndefinedBehaviour, write_columns, write_rows

# The slot CUDA-graph padding rows write (SGLang's reserved_skip_index default).
RESERVED_SLOT = 0


def layer_index(layer: Any, layer_id_override: Optional[int]) -> int:
    return layer_id_override if layer_id_override is not None else layer.layer_id


class JudgeTokenPool:
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
        if torch.device(device).type != "cpu":
            raise ValueError("the judge runs only on ('cpu',)")

    def _zeros(self, *row: int, dtype: Optional[torch.dtype] = None) -> list[torch.Tensor]:
        """One (size + page_size, *row) buffer per layer: slot 0 is the padding sink."""
        return [
            torch.zeros(
                (self.size + self.page_size, *row),
                dtype=dtype or self.store_dtype,
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]

    def _view(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.view(self.dtype) if self.store_dtype != self.dtype else buffer

    def _stored(self, values: torch.Tensor) -> np.ndarray:
        """The caller's values as the bit patterns the buffer stores: cast to the pool dtype
        unless they already are in it (then only reinterpreted, fp8 as uint8)."""
        bits = bits_of(values)
        if values.dtype != self.dtype:
            bits = cast_bits(bits, values.dtype, self.dtype)
        return bits.reshape(tuple(values.shape))


class MHAJudgePool(JudgeTokenPool):
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
        self.k_buffer = self._zeros(self.head_num, self.head_dim)
        self.v_buffer = self._zeros(self.head_num, self.v_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.k_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.v_buffer[layer_id - self.start_layer])

    def _divide(
        self, cache_k: torch.Tensor, cache_v: torch.Tensor, k_scale: Any, v_scale: Any
    ) -> None:
        # Only on the way to a cast, and both before either cast: k and v may share memory.
        if cache_k.dtype != self.dtype:
            if k_scale is not None:
                divide_in_place(cache_k, k_scale)
            if v_scale is not None:
                divide_in_place(cache_v, v_scale)

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
        layer_id_override: Optional[int],
    ) -> None:
        index = layer_index(layer, layer_id_override) - self.start_layer
        k_buffer, v_buffer = self.k_buffer[index], self.v_buffer[index]
        self._divide(cache_k, cache_v, k_scale, v_scale)
        self._write(k_buffer, loc, self._stored(cache_k), "k")
        self._write(v_buffer, loc, self._stored(cache_v), "v")

    def _store_masked(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
        mask: torch.Tensor,
    ) -> None:
        """SGLang 0.5.23's masked_set_kv_buffer_kernel: one program per row of cache_k, which
        stores row i at loc[i] where mask[i] is not 0. It reads loc and mask past their end, V
        with K's row shape and a slot without bounds: the judge names no bytes for those."""
        tokens = cache_k.shape[0]
        if loc.shape[0] < tokens or mask.shape[0] < tokens or cache_v.shape != cache_k.shape:
            raise UndefinedBehaviour(
                "a DCP rank's masked write reads loc, the mask and V by cache_k's rows"
            )
        kept = mask[:tokens].cpu() != 0
        slots = loc[:tokens].cpu()[kept]
        if ((slots < 0) | (slots >= self.size + self.page_size)).any():
            raise UndefinedBehaviour("a DCP rank's masked write stores past its buffer unchecked")
        self._divide(cache_k, cache_v, k_scale, v_scale)
        # The kept rows, divided already, are stored without scales: only cast.
        self._store(layer, slots, cache_k[kept], cache_v[kept], None, None, None)

    def _write(self, buffer: torch.Tensor, loc: torch.Tensor, rows: np.ndarray, part: str) -> None:
        write_rows(bits_view(buffer), loc, rows)

    def set_kv_buffer_prefix_valid(
        self,
        layer: Any,
        loc_2d: torch.Tensor,
        commit_lens: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        """A draft's commit, as 0.5.23's CPU path: of each request row of loc_2d only the first
        commit_lens[r] tokens, through set_kv_buffer with a bare loc and *copies* of their k/v
        rows (so a scale divides the copies, never the caller's tensors)."""
        if loc_2d.ndim != 2:
            raise ValueError(f"loc_2d must be rank-2, got shape={tuple(loc_2d.shape)}.")
        if commit_lens.ndim != 1 or commit_lens.shape[0] != loc_2d.shape[0]:
            raise ValueError("commit_lens must match loc_2d batch size")
        rows, width = loc_2d.shape
        if cache_k.shape[0] != rows * width or cache_v.shape[0] != rows * width:
            raise ValueError("KV rows must match loc_2d size")
        lens, slots = commit_lens.tolist(), loc_2d.reshape(-1).tolist()
        committed = [i for i in range(rows * width) if i % width < lens[i // width]]
        if not committed:
            return
        picked = torch.tensor(committed)
        self.set_kv_buffer(
            layer,
            torch.tensor([slots[i] for i in committed]),
            cache_k[picked],
            cache_v[picked],
            k_scale,
            v_scale,
            layer_id_override=layer_index(layer, layer_id_override),
        )


class MLAJudgePool(JudgeTokenPool):
    # Whether the era's set_mla_kv_buffer checks its row counts (judge_module sets it from the
    # era's front, EraFront.mla_rows_checked): where it does not, a count that differs from the
    # slots is UndefinedBehaviour.
    mla_rows_checked = True

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
        # A decode-context-parallel rank's pool (0.5.23 reads the group from its runtime's
        # parallel context): its doors take every rank's token ids.
        self.dcp_size, self.dcp_rank = dcp_size, dcp_rank
        self.kv_lora_rank = kv_lora_rank
        self.qk_rope_head_dim = qk_rope_head_dim
        self.kv_cache_dim = kv_lora_rank + qk_rope_head_dim
        # The buffers (by data_ptr) whose reserved slot a write skipped: the sink oracle holds
        # the candidate's slot 0 there to the canary.
        self.kept_sinks: set[int] = set()
        self._create_buffers()

    def _create_buffers(self) -> None:
        self.kv_buffer = self._zeros(1, self.kv_cache_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.kv_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.get_key_buffer(layer_id)[..., : self.kv_lora_rank]

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        if self.dcp_size > 1:
            # 0.5.23's combined-row door has no rank's rule: it asserts before it writes.
            raise AssertionError("MLATokenToKVPool.set_kv_buffer has no DCP-aware write path")
        buffer = self.kv_buffer[layer_index(layer, layer_id_override) - self.start_layer]
        write_rows(bits_view(buffer), loc, self._stored(cache_k))

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        buffer = self.kv_buffer[layer_index(layer, layer_id_override) - self.start_layer]
        parts = [self._stored(k_nope)]
        skipped = None
        if k_rope is not None and k_rope.numel() > 0:
            # 0.5.23's store (mla_buffer.py set_mla_kv_buffer_naive and the Triton kernel) drops a
            # loc equal to reserved_skip_index, slot 0, when a rope part is written (#32477);
            # its rope-less kernel writes every loc.
            parts.append(self._stored(k_rope))
            skipped = RESERVED_SLOT
            self.kept_sinks.add(buffer.data_ptr())
        if self.dcp_size > 1 and all(part.shape[0] == loc.shape[0] for part in parts):
            loc, parts, skipped = self._rank_share(loc, parts, skipped)
        write_columns(bits_view(buffer), loc, parts, skipped, self.mla_rows_checked)

    def _rank_share(
        self, loc: torch.Tensor, parts: list[np.ndarray], skipped: Optional[int]
    ) -> tuple[torch.Tensor, list[np.ndarray], None]:
        """The tokens a DCP rank keeps, at its rows: a global id is skipped (the reserved one)
        before the rank's are chosen, those with id % dcp_size == dcp_rank, each at row
        id // dcp_size (torch's floor division and modulo, a negative id included)."""
        ids = loc.to(torch.int64)
        kept = torch.remainder(ids, self.dcp_size) == self.dcp_rank
        if skipped is not None:
            kept &= ids != skipped
        tokens = kept.nonzero().flatten()
        rows = torch.div(ids.index_select(0, tokens), self.dcp_size, rounding_mode="floor")
        return rows, [part[tokens.numpy()] for part in parts], None
