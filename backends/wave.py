"""wave (layers/attention/wave_backend.py, ROCm: the Wave kernel language's attention).

Writes as torch_flex does in every release (0.5.12 to 0.5.23): `set_kv_buffer(layer,
forward_batch.out_cache_loc, k, v)` before the attention in extend and decode, a bare loc, no
scales, no SWA loc (plain MHA pools only), and no encoder loc (cross-attention layers would be
written at the decoder's loc: a skip, as for triton).
"""

from __future__ import annotations

from backends import torch_flex
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.real_code import RealCode
from backends.skips import no_cross_attention
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

FILE = "wave_backend.py"

CENSUS = torch_flex.bare_loc_census(FILE)


@register_backend(
    name="wave",
    order=84,
    census=CENSUS,
    device_type="cuda",  # ROCm GPUs show as torch's cuda device
    # Not swa_mha: with no SWA loc, a SWA pool's door raises from 0.5.13 on (the release's
    # and the judge's alike: measured, every kwarg-to-current check on swa_mha both raised).
    pool_kinds=names(MHA),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    # Not its own __init__ or init_forward_metadata: they size Wave kernels' split buffers on
    # the device; the write comes first in both forwards and reads only the pool.
    real_code=RealCode("sglang.srt.layers.attention.wave_backend", "WaveAttnBackend"),
    summary="bare out_cache_loc, no scales, every era",
    skips=(no_cross_attention("wave", FILE + " 0.5.12-0.5.23"),),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    torch_flex.write(req, era, mode)
