"""SGLang's base pools, built from an era's front-ends over the module's store engine: MHA, MLA
(and DSATokenToKVPool, MLA rows beside the DSA indexer's keys, which the DSA kinds build on) and
the SWA pool every SWA kind shares."""

from __future__ import annotations

from typing import Any

from pools.builtin.dsa_storage import DSAStorage
from pools.kinds.composite import SWA_DSA
from pools.kinds.pool_classes import builtin_pool
from pools.kinds.token_major import MHA, MLA, SWA_MHA, SWA_MLA


@builtin_pool(MHA)
def mha_pool(module: Any) -> type:
    era = module.era_front
    return type("MHATokenToKVPool", (era.MHATokenToKVPool,), {"engine": module.store_engine})


@builtin_pool(MLA)
def mla_pools(module: Any) -> dict[str, type]:
    era = module.era_front
    mla = type("MLATokenToKVPool", (era.MLATokenToKVPool,), {"engine": module.store_engine})
    return {
        "MLATokenToKVPool": mla,
        "DSATokenToKVPool": type("DSATokenToKVPool", (DSAStorage, mla), {}),
    }


@builtin_pool(SWA_MHA, SWA_MLA, SWA_DSA)
def swa_pool(module: Any) -> type:
    sub_pool = {"default_sub_pool_class": module.MHATokenToKVPool}
    return type("SWAKVPool", (module.era_front.SWAKVPool,), sub_pool)
