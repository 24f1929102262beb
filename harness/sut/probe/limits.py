"""What a foreign SUT cannot do on this machine, declared as data and keyed on its probed
capabilities (harness/sut/probe/capabilities.py), never on a version.

Some code paths need a GPU (a Triton kernel launch) or lack a feature (SWA over MLA sub-pools).
Run on a machine without what they need, they raise an exception that says nothing about the
write path. A cell whose SUT probes with the limiting capability is skipped before it runs, with
the declared reason. A limit of one door (`doors`) is decided after the run instead, since a
cell may never use that door (torch_native writes MLA rows through set_kv_buffer): a one-sided
exception through that door matching the limit's error is skipped with the reason. Where the
probe could not decide (the capability is unknown), every limit is decided that way. Never a
pass, never a finding. A candidate's exception of a harness-caused kind (a DriverGap of the
real-code driver, a stand-in called, a module absent here, an attribute of an object the harness
built, a GPU runtime: harness/compare/error_causes.py, decided where it was caught) is a skip as
well, with the cause's reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from backends.sglang_names import DCP_MASK
from harness.compare.error_causes import cause_named
from harness.compare.findings import Finding
from harness.compare.snapshot import Execution
from harness.sut.probe.capabilities import Capabilities
from pools.kinds.composite import DSV4_INDEXER, SWA_DSA
from pools.kinds.hybrid import HISPARSE_DSA, HYBRID_LINEAR_DSA, QSA
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MLA
from scenarios.model import DSA_MLA_KINDS, Scenario

if TYPE_CHECKING:  # a limit reads a candidate's fields; it plans nothing
    from harness.plan.candidate import Candidate


@dataclass(frozen=True)
class SutLimit:
    name: str
    capability: str  # the Capabilities field
    value: bool  # the value that brings the limit
    pools: tuple[str, ...]
    device_types: tuple[str, ...]  # where it holds; () everywhere
    error: str  # regex the only finding (an exception) matches when decided after the run
    reason: str
    doors: tuple[str, ...] = ()  # the pool methods it is about; () the whole pool kind
    backends: tuple[str, ...] = ()  # the call sites whose cells it rules out; () every one
    # The pool dtypes it is about, decided after the run as a door's limit is; () every one.
    dtypes: tuple[str, ...] = ()
    # The SUT does not offer the kind's design at all (no such class, keyword or door): its
    # cells are combinations that cannot apply, counted apart (SkipKind.NOT_OFFERED), not skips.
    cannot_apply: bool = False


SUT_LIMITS: tuple[SutLimit, ...] = (
    SutLimit(
        "mla-door-needs-gpu",
        "mla_door_needs_gpu",
        True,
        names(MLA, SWA_MLA) + DSA_MLA_KINDS,  # the DSA pools' doors call the MLA pool's
        ("cpu",),
        r"active drivers",
        "MLATokenToKVPool.set_mla_kv_buffer launches a Triton kernel on every path (SGLang before "
        "0.5.23); without a GPU it cannot run (check it on a GPU)",
        doors=("set_mla_kv_buffer",),
    ),
    SutLimit(
        "no-prefix-valid-door",
        "prefix_valid_door",
        False,
        names(MHA),
        (),
        r"set_kv_buffer_prefix_valid",
        "MHATokenToKVPool has no set_kv_buffer_prefix_valid (SGLang before 0.5.14, and pools "
        "that model no draft commit): the dspark call site has no door to commit through",
        backends=("dspark",),
        cannot_apply=True,
    ),
    SutLimit(
        "no-dcp-mask-door",
        "dcp_mask_door",
        False,
        names(MHA),
        (),
        DCP_MASK,
        "MHATokenToKVPool.set_kv_buffer takes no dcp_kv_mask (of the releases measured, 0.5.9 to "
        "0.5.14 and sglang-kt 0.7.2; 0.5.23 has it): triton writes no decode-context-parallel "
        "rank's share through it",
        backends=("triton_dcp",),
        cannot_apply=True,
    ),
    SutLimit(
        "no-mla-dcp-rank",
        "mla_dcp_rank",
        False,
        names(MLA),
        (),
        r"takes no dcp_size",
        "MLATokenToKVPool is no decode-context-parallel rank's pool (no runtime parallel context "
        "that reads a DCP group: SGLang before 0.5.23): flashinfer_mla writes no DCP rank's share "
        "through it",
        backends=("flashinfer_mla_dcp",),
        cannot_apply=True,
    ),
    SutLimit(
        "no-swa-over-mla",
        "swa_over_mla",
        False,
        names(SWA_MLA),
        (),
        r"building the pool|unexpected keyword|head_num",
        "SWAKVPool takes no MLA sub-pools (no full/swa_kv_pool_kwargs; SGLang before 0.5.23)",
        cannot_apply=True,
    ),
    SutLimit(
        "qsa-bf16-indexer-only",
        "qsa_indexer_dtype",
        False,
        names(QSA),
        (),
        r"takes no qsa_indexer_dtype",
        "QSATokenToKVPool takes no qsa_indexer_dtype (SGLang 0.5.20 and 0.5.21): its compressed "
        "keys are bf16 only, and beside an fp8 e4m3 cache the kind's indexer is fp8",
        dtypes=("fp8_e4m3",),
    ),
    SutLimit(
        "no-hybrid-linear-dsa",
        "hybrid_linear_dsa",
        False,
        names(HYBRID_LINEAR_DSA),
        (),
        r"use_dsa|set_index_k_scale_buffer",
        "HybridLinearKVPool takes no use_dsa or has no set_index_k_scale_buffer (SGLang before "
        "0.5.21): its full-attention layers cannot be a DSA pool's",
        cannot_apply=True,
    ),
    SutLimit(
        "no-swa-dsa",
        "swa_dsa",
        False,
        names(SWA_DSA),
        (),
        r"full_kv_pool_class|DSATokenToKVPool|set_index_k_scale_buffer",
        "SWAKVPool takes no full_kv_pool_class or routes no set_index_k_scale_buffer, or the "
        "release has no DSATokenToKVPool (SGLang before 0.5.21): its full layers cannot be a DSA "
        "pool's",
        cannot_apply=True,
    ),
    SutLimit(
        "dsv4-indexer-no-global-page",
        "dsv4_indexer_global_page",
        False,
        names(DSV4_INDEXER),
        (),
        r"takes no global_page_size",
        "DeepSeekV4IndexerPool takes no global_page_size (SGLang before 0.5.22): its cache "
        "reserves a page of its own size, not one of the model's logical page (4 of its own "
        "here), so the kind's page count is not its design",
        cannot_apply=True,
    ),
    SutLimit(
        "hisparse-dsa-door-takes-bare-loc",
        "hisparse_dsa_unwraps_write_loc",
        False,
        names(HISPARSE_DSA),
        (),
        r"got KVWriteLoc",
        "HiSparseDSATokenToKVPool.set_kv_buffer indexes its mapping with the loc as given (SGLang "
        "0.5.15 to 0.5.21), and no call site of those releases hands it a KVWriteLoc: plain's "
        "canonical call is not one they make (the dsa call site's bare loc is judged instead)",
        backends=("plain",),
    ),
)


def _holds_here(limit: SutLimit, pool: str, device_type: str) -> bool:
    return pool in limit.pools and (not limit.device_types or device_type in limit.device_types)


def limit_before(
    capabilities: Optional[Capabilities], pool: str, device_type: str, backend: str = ""
) -> Optional[SutLimit]:
    """The limit a SUT's probed capabilities bring to `pool` cells of `backend`'s call site on
    `device_type`, if any."""
    if capabilities is None:
        return None
    for limit in SUT_LIMITS:
        if (
            not limit.doors
            and not limit.dtypes
            and (not limit.backends or backend in limit.backends)
            and _holds_here(limit, pool, device_type)
            and getattr(capabilities, limit.capability) is limit.value
        ):
            return limit
    return None


def skip_reason(
    scenario: Scenario, candidate: Candidate, findings: list[Finding], execution: Execution
) -> Optional[str]:
    """Why a candidate's findings are a skip, if they are: a declared limit that explains them,
    or the exception oracle's alone on a candidate `execution` whose raise the harness caused
    (its `error_cause`), which says nothing about the release."""
    limit = limit_for(scenario, candidate, findings)
    if limit is not None:
        return f"{limit.name}: {limit.reason}"
    cause = cause_named(execution.error_cause)
    if cause is None or not findings or any(f.oracle != "exception" for f in findings):
        return None
    return cause.skip_reason(execution.error or "")


def limit_for(
    scenario: Scenario, candidate: Candidate, findings: list[Finding]
) -> Optional[SutLimit]:
    """The limit that explains a one-sided exception, if any: a door's limit whose capability
    the SUT probes with (or left unknown), or any limit whose capability is unknown."""
    capabilities = candidate.capabilities
    if capabilities is None or len(findings) != 1 or findings[0].oracle != "exception":
        return None
    text = f"{findings[0].message} {findings[0].written_by or ''}"
    device_type = candidate.device.split(":", 1)[0]
    for limit in SUT_LIMITS:
        probed = getattr(capabilities, limit.capability)
        decided_after = probed is None or ((limit.doors or limit.dtypes) and probed is limit.value)
        through = not limit.doors or findings[0].door in limit.doors
        of_dtype = not limit.dtypes or scenario.geometry.dtype in limit.dtypes
        if (
            decided_after
            and through
            and of_dtype
            and (not limit.backends or candidate.backend in limit.backends)
            and _holds_here(limit, scenario.geometry.pool, device_type)
            and re.search(limit.error, text)
        ):
            return limit
    return None
