"""One check's time split into its steps (issue 60), on the exploring cell of
test_harness_cost_bench.py: the Hypothesis draw; the judge's executions (one per era) and the
builtin candidates'; inside every execution, the pool (built and canary-filled, or an idle one
proved as built), the staging of the forward's tensors and write requests, the writes and the
snapshot; the expected writes the oracles read; and the comparison. Each in ms per example, so
that each step of making a check cheaper is measured against it (docs/bench.md has the table).

`python -m pytest benchmarks/test_check_profile_bench.py -s --kvh-profiles dev` prints it;
extra_info keeps it.
"""

from __future__ import annotations

import importlib
import time
from collections import defaultdict
from typing import Any, Callable

import pytest

from harness.cli import main
from pools.kinds.token_major import MHA

CELL = (MHA.name, "bf16", "plain")  # test_harness_cost_bench.py's

# label -> (module whose name is timed, name): each timed where the check calls it.
STEPS = {
    "explore": ("harness.run.exploring", "explore"),
    "check": ("harness.run.exploring", "check_cell"),
    "judge executions": ("harness.run.baselines", "execute"),
    "candidate executions": ("harness.run.cells", "execute"),
    "  pool: built and filled, or reuse proved": ("harness.run.execute", "take_pool"),
    "  staging: forward tensors": ("harness.run.execute", "ForwardStaging"),
    "  staging: write requests": ("harness.run.execute", "write_request"),
    "  snapshot": ("harness.run.execute", "snapshot"),
    "expected writes": ("harness.run.baselines", "expected_writes"),
    "comparison": ("harness.run.cells", "decide"),
}


class StepTimes:
    """Seconds spent in each step, the executions' own write time, and the examples drawn."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.examples = 0

    def timed(self, label: str, function: Callable) -> Callable:
        def wrapper(*arguments: Any, **keywords: Any) -> Any:
            started = time.perf_counter()
            try:
                result = function(*arguments, **keywords)
            finally:
                self.seconds[label] += time.perf_counter() - started
            if label == "explore":
                self.examples += result.examples
            write_ns = getattr(result, "write_ns", None)
            if label.endswith("executions") and write_ns is not None:
                self.seconds["  writes (the pools' own)"] += write_ns / 1e9
            return result

        return wrapper

    def table(self) -> dict[str, float]:
        """ms per example of each step; `draw` is explore's time outside the checks."""
        per = 1e3 / max(self.examples, 1)
        rows = {"draw": (self.seconds["explore"] - self.seconds["check"]) * per}
        rows.update({label: seconds * per for label, seconds in self.seconds.items()})
        del rows["explore"]
        return rows


@pytest.fixture
def step_times(monkeypatch) -> StepTimes:
    times = StepTimes()
    for label, (module_name, name) in STEPS.items():
        module = importlib.import_module(module_name)
        monkeypatch.setattr(module, name, times.timed(label, getattr(module, name)))
    return times


def test_check_profile(benchmark, profile: str, step_times: StepTimes, tmp_path, request) -> None:
    examples = int(request.config.getoption("--kvh-examples"))
    pool, dtype, backend = CELL
    argv = ["run", "--pool", pool, "--dtype", dtype, "--backend", backend,
            "--examples", str(examples), "--profile", profile, "--seed", "0"]  # fmt: skip
    codes = []
    benchmark.pedantic(
        lambda: codes.append(main([*argv, "--out", str(tmp_path / "run")])), rounds=1
    )
    table = step_times.table()
    benchmark.extra_info.update(profile=profile, examples=step_times.examples, ms_per_example=table)
    print(f"\none check of {'/'.join(CELL)} at {profile}, {step_times.examples} examples, ms each:")
    for label, milliseconds in table.items():
        print(f"  {label:<45} {milliseconds:8.2f}")
    assert codes == [0] and step_times.examples > 0
