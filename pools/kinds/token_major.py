"""SGLang's four base pools: token-major MHA and MLA rows, alone or as a sliding-window pool's
full and SWA sub-pools. Every era's call sites write them."""

from pools.kinds.spec import PoolKind

RECORDS = (
    PoolKind("mha", "MHATokenToKVPool", "token-major", 1, base=True),
    PoolKind("mla", "MLATokenToKVPool", "token-major", 2, base=True, latent=True),
    PoolKind("swa_mha", "SWAKVPool", "token-major", 3, base=True, swa=True),
    PoolKind("swa_mla", "SWAKVPool", "token-major", 4, base=True, latent=True, swa=True),
)
