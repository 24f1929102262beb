"""The already-quantised rows a MiniMax M3 NVFP4 pool's byte-copy doors are handed, derived from
the scenario's k, v and index k.

SGLang's own quantiser (NVFP4KVQuantizeUtil.quantize) needs SM90+, so the harness does not
quantise: a head row's packed payload is its first NVFP4_PAYLOAD raw bytes and its E4M3 block
scales the next NVFP4_SCALES, as the host copy (get_cpu_copy) holds them: payload uint8, scales
viewed as float8_e4m3fn. Every byte of a row is then distinct data drawn from the seed, which is
all a byte-copy door's placement check needs. The call site (backends/retraction_restore.py) and
the value oracle both derive them from the same draw, as every kind derives its caller's tensors.
"""

from __future__ import annotations

import torch

from pools.kinds.fixed_geometry import NVFP4_PAYLOAD, NVFP4_SCALES


def quantised_rows(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens, heads, 128) values of any dtype -> ((tokens, heads, 64) uint8 packed payload,
    (tokens, heads, 8) float8_e4m3fn block scales), fresh tensors on values' device."""
    raw = values.contiguous().view(torch.uint8).reshape(*values.shape[:2], -1)
    payload = raw[..., :NVFP4_PAYLOAD].contiguous()
    scales = raw[..., NVFP4_PAYLOAD : NVFP4_PAYLOAD + NVFP4_SCALES].contiguous()
    return payload, scales.view(torch.float8_e4m3fn)
