"""What a foreign SUT cannot do on this machine, declared as data and keyed on its probed
capabilities (harness/sut/capabilities.py), never on a version.

Some code paths need a GPU (a Triton kernel launch) or lack a feature (SWA over MLA sub-pools).
Run on a machine without what they need, they raise an exception that says nothing about the
write path. A cell whose SUT probes with the limiting capability is skipped before it runs, with
the declared reason. Where the probe could not decide (the capability is unknown), the cell runs,
and a one-sided exception matching the limit's error is reported as skipped with the reason,
never as a pass or a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from harness.candidate import Candidate
from harness.findings import Finding
from harness.sut.capabilities import Capabilities
from scenarios.model import Scenario


@dataclass(frozen=True)
class SutLimit:
    name: str
    capability: str  # the Capabilities field
    value: bool  # the value that brings the limit
    pools: tuple[str, ...]
    device_types: tuple[str, ...]  # where it holds; () everywhere
    error: str  # regex the only finding (an exception) matches when the capability is unknown
    reason: str


SUT_LIMITS: tuple[SutLimit, ...] = (
    SutLimit(
        "mla-door-needs-gpu",
        "mla_door_needs_gpu",
        True,
        ("mla", "swa_mla"),
        ("cpu",),
        r"active drivers",
        "MLATokenToKVPool.set_mla_kv_buffer launches a Triton kernel on every path (SGLang before "
        "0.5.23); without a GPU it cannot run (check it on a GPU)",
    ),
    SutLimit(
        "no-swa-over-mla",
        "swa_over_mla",
        False,
        ("swa_mla",),
        (),
        r"building the pool|unexpected keyword|head_num",
        "SWAKVPool takes no MLA sub-pools (no full/swa_kv_pool_kwargs; SGLang before 0.5.23)",
    ),
)


def _holds_here(limit: SutLimit, pool: str, device_type: str) -> bool:
    return pool in limit.pools and (not limit.device_types or device_type in limit.device_types)


def limit_before(
    capabilities: Optional[Capabilities], pool: str, device_type: str
) -> Optional[SutLimit]:
    """The limit a SUT's probed capabilities bring to `pool` cells on `device_type`, if any."""
    if capabilities is None:
        return None
    for limit in SUT_LIMITS:
        if _holds_here(limit, pool, device_type) and (
            getattr(capabilities, limit.capability) is limit.value
        ):
            return limit
    return None


def limit_for(
    scenario: Scenario, candidate: Candidate, findings: list[Finding]
) -> Optional[SutLimit]:
    """The limit that explains a one-sided exception of a SUT whose probe left the limiting
    capability unknown, if any."""
    capabilities = candidate.capabilities
    if capabilities is None or len(findings) != 1 or findings[0].oracle != "exception":
        return None
    text = f"{findings[0].message} {findings[0].written_by or ''}"
    device_type = candidate.device.split(":", 1)[0]
    for limit in SUT_LIMITS:
        if (
            getattr(capabilities, limit.capability) is None
            and _holds_here(limit, scenario.geometry.pool, device_type)
            and re.search(limit.error, text)
        ):
            return limit
    return None
