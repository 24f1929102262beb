"""tokenspeed_mla (layers/attention/tokenspeed_mla_backend.py 0.5.12-0.5.14, CUDA SM100: the
tokenspeed-mla CuTe DSL kernels; a trtllm_mla subclass; the file is gone by 0.5.23, where
cutedsl_mla is its successor).

TokenspeedMLABackend overrides only trtllm_mla's kernels (`_run_decode_kernel`,
`_run_prefill_kernel`), so its forwards are trtllm_mla's: `set_mla_kv_buffer(layer,
out_cache_loc, k, k_rope)`, the call this module makes. 0.5.13 and 0.5.14 add
`prepare_prefill_qkv`, which writes FP8 latent rows its fused rope-quantise kernel produced and
is called by the model's prefill, not by a forward: not modelled (as cutedsl_mla's). 0.5.12's
file has no write call of its own. Its __init__ refuses a cache that is not fp8_e4m3 and a page
size other than 32 or 64; the driver does not run it, and the bf16 cells drive the inherited
call site, which is the same call; trtllm_mla's skips (its fp8 quantize-and-rope path) apply.
"""

from __future__ import annotations

from backends import trtllm_mla
from backends.call_shapes import ATTENTION, CallSiteModel
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MLA_POOLS, entries_of, register_backend
from backends.real_code import RealCode

FILE = "tokenspeed_mla_backend.py"
ERAS = ("legacy", "kwarg", "bundled")  # 0.5.12 to 0.5.14; 0.5.23 has no such file

# No shapes and no branches of its own: the file's only write call is in prepare_prefill_qkv,
# left out below; the calls its forwards make are trtllm_mla_backend.py's, checked there.
CENSUS = CallSiteModel(
    (ATTENTION + FILE,),
    {},
    unmodelled_functions={
        "prepare_prefill_qkv": "the model's prefill hands it FP8 rows its fused rope-quantise "
        "kernel (a GPU kernel) made; no attention forward calls it"
    },
    calls_of="trtllm_mla",
)


@register_backend(
    name="tokenspeed_mla",
    order=134,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    eras=ERAS,
    dtypes=BF16_ONLY,
    real_code=RealCode(
        "sglang.srt.layers.attention.tokenspeed_mla_backend",
        "TokenspeedMLABackend",
        fields=trtllm_mla.trtllm_mla_fields,
    ),
    summary="trtllm_mla's write (inherited): set_mla_kv_buffer, out_cache_loc; 0.5.12-0.5.14",
    skips=entries_of(trtllm_mla)[0].skips,
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    trtllm_mla.write(req, era, mode)
