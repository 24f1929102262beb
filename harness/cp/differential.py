"""The context-parallel differential: every rank's pool against the single-process write.

Each rank of a torch.distributed group runs the plan's scenarios through the CP call site
(backends.cp_distributed, or a user's site module) in every era, and judges its own pool with
the harness's oracles against the single-process write of the full sequence: the `plain`
(MLA: `plain_mla`) call site of the candidate's era on the baseline pools, with the verdict of
`kvh run` (harness/compare/verdict.py). A finding names its rank. The plan is JSON, because
spawned ranks rebuild it from the payload alone.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Optional

import torch.distributed as dist

from backends import cp_distributed, cp_release
from backends.registry import BACKENDS, EXTEND_FOCUS, Backend
from harness.compare.findings import Finding
from harness.cp.distributed import GroupOutcome, launch, rank_device
from harness.plan.candidate import Candidate
from harness.run.baselines import decide, run_baselines
from harness.run.execute import execute
from harness.sut.load.environments import is_isolated_spec, load_isolated_here
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import load_foreign, parse_builtin
from pools.builtin.eras import ERAS
from pools.builtin.sut import builtin_module
from pools.kinds.registry import KINDS
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios
from scenarios.model import BASE_POOL_KINDS, Scenario
from scenarios.serialize import from_dict, to_dict

BACKEND_NAME = "cp_dist"
# The registry's cp entry, whose release code a rank runs once it joined the release's CP group.
RELEASE_BACKEND = BACKENDS["cp"]
DEFAULT_SITE = cp_distributed.__name__
# MHA, SWA over MHA and MLA: SWA-MLA layers have no CP write in any release (0.5.23's MLA writes
# never carry swa_loc), as the registry's fa3 entry has it.
CP_POOLS = tuple(pool for pool in BASE_POOL_KINDS if not (KINDS[pool].swa and KINDS[pool].latent))
# A rank's k/v are its shares, not the caller's full tensors the baseline was handed, so the
# caller-tensor oracle has nothing to compare: the pools are what the CP write must agree on.
NOT_JUDGED = "caller tensors: a rank's k/v are its shares, not the full sequence"


@dataclass(frozen=True)
class CpPlan:
    scenarios: tuple[Scenario, ...]
    eras: tuple[str, ...] = tuple(ERAS)
    engine: str = "torch"
    sut: str = "builtin"
    site: str = DEFAULT_SITE  # a module (dotted or .py) whose write(req, era, mode) is the site
    device_type: str = "cpu"

    def to_payload(self) -> dict:
        return {**asdict(self), "scenarios": [to_dict(s) for s in self.scenarios]}

    @classmethod
    def from_payload(cls, payload: dict) -> CpPlan:
        fields = {**payload, "scenarios": tuple(from_dict(s) for s in payload["scenarios"])}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def default_plan(pools: tuple[str, ...] = CP_POOLS, seed: int = 0, **choices: Any) -> CpPlan:
    """The builtin small scenarios the `cp` backend focuses on (scales, padding and narrowing,
    cross-attention), in bf16, for each pool kind."""
    scenarios = tuple(
        s for pool in pools for s in default_scenarios(pool, "bf16", seed) if s.name in EXTEND_FOCUS
    )
    return CpPlan(scenarios, **choices)


def load_site(spec: str) -> Any:
    if spec.endswith(".py"):
        path = Path(spec)
        module_spec = importlib.util.spec_from_file_location(f"kvh_cp_site_{path.stem}", path)
        if module_spec is None or not path.is_file():
            raise ValueError(f"CP call site {spec} is not a Python file")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(spec)
    if not callable(getattr(module, "write", None)):
        raise ValueError(f"CP call site {spec} has no write(req, era, mode)")
    return module


def _candidates(plan: CpPlan, device: str) -> list[Candidate]:
    if parse_builtin(plan.sut) is not None:
        return [
            Candidate(
                plan.sut, builtin_module(era, plan.engine), era, plan.engine, device, BACKEND_NAME
            )
            for era in plan.eras
        ]
    loaded = load_isolated_here(plan.sut) if is_isolated_spec(plan.sut) else load_foreign(plan.sut)
    if loaded.era is None:
        raise SutLoadError(loaded.unfit_reason)
    return [
        Candidate(
            plan.sut,
            loaded.module,
            loaded.era,
            "-",
            device,
            BACKEND_NAME,
            capabilities=loaded.capabilities,
        )
    ]


def single_process_backend(scenario: Scenario) -> Backend:
    return BACKENDS["plain_mla" if scenario.geometry.kind.latent else "plain"]


def check_on_rank(rank: int, world: int, payload: dict) -> dict:
    """The rank body: every (scenario, candidate) on this rank, judged; JSON for the launcher."""
    plan = CpPlan.from_payload(payload)
    release = parse_builtin(plan.sut) is None and plan.site == DEFAULT_SITE
    if release:
        cp_release.cpu_engine(plan.device_type)  # before the release is imported
    device = rank_device(plan.device_type, rank)
    candidates = _candidates(plan, device)
    # A release that joins its own CP group writes with its own code; else the site's model.
    model_why = (
        cp_release.join_group(rank, world, dist.get_backend())
        if release
        else f"--site {plan.site}"
        if plan.site != DEFAULT_SITE
        else "builtin pools"
    )
    site = Backend(
        BACKEND_NAME if model_why else RELEASE_BACKEND.name,
        plan.device_type,
        CP_POOLS,
        ("extend",),
        load_site(plan.site).write,
        focus=None,
        real_code=None if model_why else RELEASE_BACKEND.real_code,
    )
    candidates = [replace(candidate, backend=site.name) for candidate in candidates]
    checks = []
    for index, scenario in enumerate(plan.scenarios):
        # No per-call time limit: an alarm on one rank would desynchronise the group's
        # collectives; a hang is the launcher's to end.
        baselines = run_baselines(
            scenario,
            single_process_backend(scenario),
            "extend",
            {candidate.era for candidate in candidates},
            None,
            judge_caller=False,
        )  # NOT_JUDGED
        for candidate in candidates:
            verdict = decide(baselines, candidate, execute(candidate, scenario, None, site))
            skipped = verdict.outcome is Outcome.SKIPPED
            label = f"{candidate.label} rank {rank}/{world}"
            findings = [] if skipped else [f.for_candidate(label) for f in verdict.findings]
            checks.append(
                {
                    "scenario": index,
                    "candidate": candidate.as_dict(),
                    "outcome": verdict.outcome.value,
                    "skip_reason": verdict.skip_reason,
                    "divergence": verdict.divergence and verdict.divergence.name,
                    "findings": [finding.to_dict() for finding in findings],
                    "writes": site.name,
                }
            )
    return {"device": device, "checks": checks, "model_why": model_why}


@dataclass(frozen=True)
class RankCheck:
    rank: int
    world: int
    scenario: Scenario
    candidate: dict
    outcome: Outcome
    findings: list[Finding]
    divergence: Optional[str] = None  # the known divergence that explains the difference
    skip_reason: str = ""  # the declared SUT limit of a SKIPPED check
    writes: str = BACKEND_NAME  # RELEASE_BACKEND's name where the release's own code wrote


def run_group(
    plan: CpPlan, world: int, timeout_s: float = 120.0, collective_timeout_s: float = 60.0
) -> tuple[GroupOutcome, list[RankCheck]]:
    """Launch `world` ranks on the plan; the group's outcome and every rank's checks."""
    load_site(plan.site)  # a bad site is the user's error, before any rank starts
    outcome = launch(
        check_on_rank,
        world,
        plan.to_payload(),
        device_type=plan.device_type,
        timeout_s=timeout_s,
        collective_timeout_s=collective_timeout_s,
    )
    checks = [
        RankCheck(
            rank,
            world,
            plan.scenarios[check["scenario"]],
            check["candidate"],
            Outcome(check["outcome"]),
            [Finding(**f) for f in check["findings"]],
            check["divergence"],
            check["skip_reason"],
            check.get("writes", BACKEND_NAME),
        )
        for rank, result in sorted(outcome.results.items())
        for check in result["checks"]
    ]
    return outcome, checks
