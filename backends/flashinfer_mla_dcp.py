"""flashinfer_mla under --dcp-size > 1 (layers/attention/flashinfer_mla_backend.py, 0.5.23): a
decode-context-parallel rank's MLA write.

The backend's call is the one it makes on any rank: KVWriteLoc.for_batch(forward_batch), whose
out_cache_loc holds every rank's global token ids. The rank's MLA pool selects its own (0.5.23's
set_mla_kv_buffer: a loc not declared resolved is widened), id % dcp_size == dcp_rank, at row
id // dcp_size, after it drops the reserved id 0 where a rope part is written. Without a rope
part the backend calls the combined-row set_kv_buffer, which has no DCP rule and asserts. The
scenarios are the DCP rank's (Geometry.dcp_size, dcp_rank), which no other MLA call site runs;
the group reaches the release's pool through its parallel context (harness/sut/load/dcp_rank.py).
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.flashinfer_mla import REAL_CODE, write_latent
from backends.triton_dcp import DCP_FOCUS
from pools.kinds.spec import names
from pools.kinds.token_major import MLA


@register_backend(
    name="flashinfer_mla_dcp",
    real_code=REAL_CODE,
    order=111,
    device_type="cuda",
    pool_kinds=names(MLA),
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    dtypes=BF16_AND_FP8,
    focus=DCP_FOCUS,
    writes_dcp_rank=True,
    summary="flashinfer_mla's write on a DCP rank: every rank's out_cache_loc, which the MLA pool "
    "narrows to id % dcp_size == dcp_rank at row id // dcp_size",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    write_latent(req, era)
