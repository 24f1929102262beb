"""CP repro files: the scenario, the candidate, the call site, the group size and the ranks that
found something; `kvh cp --repro FILE` and `kvh repro FILE` both launch the same group again
through `replay_and_report`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from harness.cp.cp_output import report_group
from harness.cp.differential import CpPlan, RankCheck, run_group
from harness.cp.distributed import GroupOutcome
from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.report.repro_files import ReproError, read_repro_json
from harness.sut.load.load_errors import SutLoadError
from reports.atomic import write_json_atomic
from scenarios.serialize import ScenarioError, from_dict, to_dict

FORMAT = "kvh-cp-repro"
VERSION = 1


def is_cp_repro(path: Path) -> bool:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def save_cp_repro(folder: Path, plan: CpPlan, checks: list[RankCheck]) -> Path:
    """One file for one (scenario, candidate), holding every rank's findings."""
    first = checks[0]
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "world": first.world,
        "ranks": [check.rank for check in checks],
        "scenario": to_dict(first.scenario),
        "candidate": first.candidate,
        "site": plan.site,
        "device_type": plan.device_type,
        "findings": [finding.to_dict() for check in checks for finding in check.findings],
    }
    digest = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]
    c, g = first.candidate, first.scenario.geometry
    name = (
        f"cp{first.world}-{g.pool}-{c['era']}-{c['engine']}-"
        f"{first.scenario.name or 'scenario'}-{digest}.json"
    )
    return write_json_atomic(Path(folder) / name.replace("/", "_").replace(":", "_"), payload)


def load_cp_repro(path: Path) -> tuple[CpPlan, int, dict]:
    """(plan of the one scenario and candidate, group size, the recorded payload)."""
    payload = read_repro_json(path, FORMAT, VERSION)
    try:
        candidate, world = payload["candidate"], int(payload["world"])
        plan = CpPlan(
            (from_dict(payload["scenario"]),),
            eras=(candidate["era"],),
            engine=candidate["engine"],
            sut=candidate["sut"],
            site=payload["site"],
            device_type=payload["device_type"],
        )
    except KeyError as missing:
        raise ReproError(f"{path}: missing field {missing}") from None
    except (ScenarioError, TypeError, ValueError) as error:
        raise ReproError(f"{path}: {error}") from None
    if world < 1:
        raise ReproError(f"{path}: world {world} is not a group size")
    return plan, world, payload


def replay_cp(
    path: Path, device_type: Optional[str] = None, timeout_s: float = 120.0
) -> tuple[dict, GroupOutcome, list[RankCheck]]:
    plan, world, payload = load_cp_repro(path)
    if device_type is not None:
        plan = CpPlan(plan.scenarios, plan.eras, plan.engine, plan.sut, plan.site, device_type)
    outcome, checks = run_group(plan, world, timeout_s=timeout_s)
    return payload, outcome, checks


def replay_and_report(
    path: Path, device_type: Optional[str] = None, timeout_s: float = 120.0
) -> int:
    """Replay a CP repro and print what it does now; the exit code: 1 while it still reproduces
    (or a rank fails), 0 once fixed. A file that cannot be replayed is a UsageError."""
    try:
        payload, outcome, checks = replay_cp(
            path, device_type and device_type.split(":")[0], timeout_s
        )
    except (ReproError, SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    print(f"replayed {path} on {payload['world']} ranks (recorded ranks {payload['ranks']})")
    for finding in payload["findings"]:
        print(f"recorded: {finding['candidate']}: [{finding['oracle']}] {finding['message']}")
    return EXIT_FINDINGS if report_group(outcome, checks) else EXIT_OK
