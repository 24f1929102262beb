"""SGLang's four base pools: token-major MHA and MLA rows, alone or as a sliding-window pool's
full and SWA sub-pools. Every era's call sites write them."""

from pools.kinds.spec import PoolKind

MHA = PoolKind(
    "mha",
    "MHATokenToKVPool",
    "token-major",
    1,
    base=True,
    doors=("set_kv_buffer", "set_kv_buffer_prefix_valid"),  # the latter: dspark's draft commit
    pipeline_rank=True,
    dcp_rank=True,  # triton's write under --dcp-size > 1 (backends/triton_dcp.py)
)

MLA = PoolKind(
    "mla",
    "MLATokenToKVPool",
    "token-major",
    2,
    base=True,
    latent=True,
    pipeline_rank=True,
    dcp_rank=True,  # flashinfer_mla's widened write under --dcp-size > 1 (flashinfer_mla_dcp)
)

SWA_MHA = PoolKind("swa_mha", "SWAKVPool", "token-major", 3, base=True, swa=True)

SWA_MLA = PoolKind("swa_mla", "SWAKVPool", "token-major", 4, base=True, latent=True, swa=True)

RECORDS = (
    MHA,
    MLA,
    SWA_MHA,
    SWA_MLA,
)
