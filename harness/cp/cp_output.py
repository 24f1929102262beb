"""What a CP group's checks tell the user (printed lines) and the results store (one check row
per cell and group size), shared by `kvh cp` and the replay of a CP repro."""

from __future__ import annotations

from harness.cp.differential import RELEASE_BACKEND, RankCheck
from harness.cp.distributed import GroupOutcome
from reports.outcome import Outcome


def failed_checks(checks: list[RankCheck]) -> list[RankCheck]:
    return [check for check in checks if check.outcome is Outcome.FINDING]


def report_group(outcome: GroupOutcome, checks: list[RankCheck]) -> bool:
    """Print the group's rank failures and findings; whether anything failed."""
    failed = failed_checks(checks)
    print(
        f"world {outcome.world} ({outcome.backend}): {len(checks)} checks on "
        f"{len(outcome.results)}/{outcome.world} ranks, {len(failed)} with findings, "
        f"{outcome.seconds:.1f}s"
    )
    release_code = RELEASE_BACKEND.real_code.where
    for why in sorted({result.get("model_why") for result in outcome.results.values()}, key=str):
        writer = (
            f"the release's own CP code ({release_code})" if why is None else f"the model ({why})"
        )
        print(f"world {outcome.world}: {writer} writes")
    for failure in outcome.failures:
        print(f"RANK FAILURE world {outcome.world} {failure.line()}")
    for check in failed:
        print(
            f"FINDING {check.findings[0].candidate} `{check.scenario.name}` "
            f"({check.scenario.geometry.pool}): {check.findings[0].headline()}"
        )
    return bool(failed or outcome.failures)


def by_cell(checks: list[RankCheck]) -> dict[tuple, list[RankCheck]]:
    """Each (scenario, pool, era) with its checks on every rank."""
    cells: dict[tuple, list[RankCheck]] = {}
    for check in checks:
        g = check.scenario.geometry
        cells.setdefault((check.scenario.name, g.pool, check.candidate["era"]), []).append(check)
    return cells


def cell_record(cell: list[RankCheck], world: int) -> dict:
    """One check row per cell: its worst outcome over the ranks, naming the ranks that found."""
    failed = failed_checks(cell)
    worst = (
        failed
        or [check for check in cell if check.outcome is Outcome.KNOWN_DIVERGENCE]
        or [check for check in cell if check.outcome is Outcome.SKIPPED]
        or cell
    )
    first = worst[0]
    geometry = first.scenario.geometry
    return {
        **first.candidate,
        "backend": f"{first.writes}_w{world}",
        "pool": geometry.pool,
        "dtype": geometry.dtype,
        "scenario": first.scenario.name,
        "outcome": first.outcome.value,
        "findings": sum(len(check.findings) for check in cell),
        "divergence": first.divergence or "",
        "detail": f"ranks {[check.rank for check in failed]}: {first.findings[0].headline()}"
        if failed
        else first.skip_reason,
        "tokens": sum(f.tokens for f in first.scenario.forwards),
    }
