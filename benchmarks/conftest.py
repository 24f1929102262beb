"""pytest-benchmark suites of the KV write path: options, and the verified timed write fixture.

Run: `python -m pytest benchmarks --benchmark-json=out.json` (add --benchmark-save-data to keep
raw samples). Not part of the default test run (pyproject testpaths is tests/).
"""

from __future__ import annotations

import pytest

from harness.bench.measure import TimedWrite
from harness.bench.plan import bench_scenario, bytes_moved
from harness.bench.verify import Baseline
from harness.plan.devices import unavailable_reason
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kvh")
    group.addoption(
        "--kvh-device", default="cpu", help="torch device of the timed pools (default cpu)"
    )
    group.addoption("--kvh-tokens", default="1,256,4096", help="comma list of token counts")
    group.addoption(
        "--kvh-slots", default="1024,16384,131072", help="comma list of pool sizes (harness cost)"
    )
    group.addoption(
        "--kvh-profiles", default="dev,ci,nightly", help="comma list of profiles (harness cost)"
    )
    group.addoption("--kvh-examples", default="40", help="examples per profile run (harness cost)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tokens" in metafunc.fixturenames:
        tokens = [
            int(part) for part in metafunc.config.getoption("--kvh-tokens").split(",") if part
        ]
        metafunc.parametrize("tokens", tokens)
    for name, option, kind in (("slots", "--kvh-slots", int), ("profile", "--kvh-profiles", str)):
        if name in metafunc.fixturenames:
            values = metafunc.config.getoption(option).split(",")
            metafunc.parametrize(name, [kind(value) for value in values if value])


@pytest.fixture
def device(request: pytest.FixtureRequest) -> str:
    name = request.config.getoption("--kvh-device")
    reason = unavailable_reason(name)
    if reason:
        pytest.skip(reason)
    return name


@pytest.fixture
def timed_write(benchmark, device: str):
    """time(pool, dtype, era, engine, tokens): times the plain call site in pedantic mode (inputs
    restored before every round, outside the timing), verifies the last write's bytes against
    the baseline, and fills extra_info with the cell and its GB/s."""

    def time_write(
        pool: str, dtype: str, era: str, engine: str, tokens: int, layers: int = 1, rounds: int = 20
    ) -> None:
        scenario = bench_scenario(pool, dtype, tokens, layers, seed=0)
        timed = TimedWrite(builtin_module(era, engine), scenario, device, "plain", era, "extend")
        benchmark.pedantic(
            timed.run, setup=timed.restore, rounds=rounds, iterations=1, warmup_rounds=3
        )
        verdict = Baseline(scenario, "plain", "extend", None, (era,)).judge(timed.snapshot(), era)
        nbytes = bytes_moved(scenario)
        benchmark.extra_info.update(
            backend="plain",
            pool=pool,
            dtype=dtype,
            sut="builtin",
            engine=engine,
            era=era,
            tokens=tokens,
            layers=layers,
            device=device,
            bytes_moved=nbytes,
            outcome=verdict.outcome.value,
        )
        if benchmark.stats is not None:  # None under --benchmark-disable: run once, still verified
            benchmark.extra_info["gbps"] = nbytes / benchmark.stats.stats.median / 1e9
        if verdict.outcome != Outcome.MEASURED:
            pytest.fail(
                f"the timed write is a {verdict.outcome.value}, not a number: {verdict.message}"
            )

    return time_write
