"""The judge's base pools over an era's doors: MHA, MLA (and DSATokenToKVPool, its MLA rows
beside the DSA indexer's keys, which the DSA kinds build on) and the SWA pool every SWA kind
shares."""

from __future__ import annotations

from typing import Any

from pools.judge.dsa_index import JudgeDSAPool
from pools.judge.eras import era_marks
from pools.judge.hybrid import JudgeHybridPool
from pools.judge.token_major import MHAJudgePool, MLAJudgePool
from pools.kinds.composite import SWA_DSA
from pools.kinds.pool_classes import judge_pool
from pools.kinds.token_major import MHA, MLA, SWA_MHA, SWA_MLA


@judge_pool(MHA)
def mha_judge(module: Any) -> type:
    front = module.era_front
    return type("MHATokenToKVPool", (MHAJudgePool, front.mha), era_marks(front))


@judge_pool(MLA)
def mla_judges(module: Any) -> dict[str, type]:
    front = module.era_front
    marks = {**era_marks(front), "mla_rows_checked": front.mla_rows_checked}
    mla = type("MLATokenToKVPool", (MLAJudgePool, front.mla), marks)
    return {
        "MLATokenToKVPool": mla,
        "DSATokenToKVPool": type("DSATokenToKVPool", (JudgeDSAPool, mla), {}),
    }


@judge_pool(SWA_MHA, SWA_MLA, SWA_DSA)
def swa_judge(module: Any) -> type:
    front = module.era_front
    marks = {**era_marks(front), "default_sub_pool_class": module.MHATokenToKVPool}
    return type("SWAKVPool", (JudgeHybridPool, front.swa), marks)
