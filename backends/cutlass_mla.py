"""cutlass_mla (layers/attention/cutlass_mla_backend.py 0.5.12-0.5.14, CUDA SM100: sgl_kernel's
CUTLASS MLA decode; a flashinfer_mla subclass; the file is gone by 0.5.23).

CutlassMLABackend inherits flashinfer_mla's forward_extend and writes in its own forward_decode
what flashinfer_mla's decode writes: `set_mla_kv_buffer(layer, forward_batch.out_cache_loc, k,
k_rope)` when k_rope is given, `set_kv_buffer(layer, out_cache_loc, k, v)` (the latent row)
otherwise; the bare loc, no scales, no SWA loc, no encoder loc. 0.5.12 writes through
forward_batch.token_to_kv_pool, 0.5.13 and 0.5.14 through the pool it keeps
(self.token_to_kv_pool): the same door of the same pool. So this module makes flashinfer_mla's
call, in the eras that have the file.
"""

from __future__ import annotations

from backends import flashinfer_mla
from backends.call_shapes import (
    ATTENTION,
    KV,
    MLA,
    CallSiteModel,
    bare_site,
    branch,
    eras_branches,
    merge,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MLA_POOLS, register_backend
from backends.real_code import RealCode

FILE = "cutlass_mla_backend.py"
ERAS = ("legacy", "kwarg", "bundled")  # 0.5.12 to 0.5.14; 0.5.23 has no such file

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14).
BRANCHES = eras_branches(
    (
        ERAS,
        (
            branch("forward_decode", "k is not None", "save_kv_cache", "k_rope is not None"),
            branch("forward_decode", "k is not None", "save_kv_cache", "k_rope is None"),
        ),
    ),
)

_SITES = merge(bare_site(MLA, "out_cache_loc"), bare_site(KV, "out_cache_loc"))

CENSUS = CallSiteModel(
    (ATTENTION + FILE,),
    {era: shapes for era, shapes in _SITES.items() if era in ERAS},
    branches=BRANCHES,
)


@register_backend(
    name="cutlass_mla",
    order=112,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    eras=ERAS,
    dtypes=BF16_AND_FP8,
    # Not its own __init__: it sizes sgl_kernel's CUTLASS workspace on the GPU. Its extend is
    # flashinfer_mla's, whose attention wrappers are fetched before the write and left out.
    real_code=RealCode(
        "sglang.srt.layers.attention.cutlass_mla_backend",
        "CutlassMLABackend",
        metadata=lambda req, mode: flashinfer_mla.MLA_WRAPPERS_LEFT_OUT,
    ),
    summary="flashinfer_mla's calls: set_mla_kv_buffer with k_rope, set_kv_buffer without; "
    "out_cache_loc; 0.5.12-0.5.14",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    flashinfer_mla.write(req, era, mode)
