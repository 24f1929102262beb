"""What a real SGLang release cannot do on this machine, declared as data.

Some release code paths need a GPU (a Triton kernel launch) or lack a feature (SWA over MLA
sub-pools). A run on CPU reaches them and gets an exception that says nothing about the write
path, so the cell is reported as skipped with the declared reason, never as a pass or a
finding. Each limit names the releases, the pool kinds and the error it is recognised by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from harness.candidate import Candidate
from harness.findings import Finding
from scenarios.model import Scenario


@dataclass(frozen=True)
class SutLimit:
    name: str
    releases: tuple[str, ...]
    pools: tuple[str, ...]
    error: str  # regex the only finding (an exception) must match
    reason: str


SUT_LIMITS: tuple[SutLimit, ...] = (
    SutLimit(
        "mla-door-needs-gpu",
        ("0.5.12", "0.5.13", "0.5.14"),
        ("mla", "swa_mla"),
        r"active drivers",
        "MLATokenToKVPool.set_mla_kv_buffer always launches a Triton kernel before 0.5.23; "
        "on a machine without a GPU it cannot run (check it on a GPU)",
    ),
    SutLimit(
        "no-swa-over-mla",
        ("0.5.12", "0.5.13", "0.5.14"),
        ("swa_mla",),
        r"building the pool|unexpected keyword|head_num",
        "SWAKVPool takes MLA sub-pools only from 0.5.23 (full/swa_kv_pool_kwargs)",
    ),
)


def limit_for(
    scenario: Scenario, candidate: Candidate, findings: list[Finding]
) -> Optional[SutLimit]:
    """The declared limit that explains a one-sided exception, if any."""
    version = str(getattr(candidate.module, "version", ""))
    if len(findings) != 1 or findings[0].oracle != "exception":
        return None
    text = f"{findings[0].message} {findings[0].written_by or ''}"
    for limit in SUT_LIMITS:
        if (
            version in limit.releases
            and scenario.geometry.pool in limit.pools
            and re.search(limit.error, text)
        ):
            return limit
    return None
