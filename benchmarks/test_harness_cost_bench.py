"""The harness's own cost (issue 41: a check costs what its writes cost, not what its pool
costs): the time of one check of the same writes against the pool's size, and examples/s of one
exploring cell at each profile, beside the draws/s of its Hypothesis strategy alone (the bound
no check can pass).

`python -m pytest benchmarks/test_harness_cost_bench.py --benchmark-save-data
--benchmark-json=out.json` keeps the raw samples. `--kvh-slots`, `--kvh-profiles` and
`--kvh-examples` narrow it; tests/test_harness_cost_bench_smoke.py runs it at its smallest size.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import settings as Settings

from backends.registry import BACKENDS
from harness.cli import main
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.run import pool_cache
from harness.run.cells import check_cell
from pools.builtin.eras import ERAS
from pools.kinds.token_major import MHA
from scenarios.defaults import default_scenarios
from scenarios.explore import explore
from scenarios.profiles import profile_named
from scenarios.strategies import scenarios as scenario_strategy

CELL = (MHA.name, "bf16", "plain")


def test_check_against_pool_size(benchmark, slots: int) -> None:
    """One prefill through the baselines and every builtin candidate, judged: the same tokens
    and bytes written at every size, in a pool of `slots` narrow rows. The pools are built on the
    warm-up round and lent again on the timed ones where the pool cache keeps them, as a run's
    examples of one geometry are; 12 pools of 2^17 slots exceed CACHE_BYTES and are built every
    round, as they are in a run. extra_info records which."""
    pool, dtype, backend_name = CELL
    backend = BACKENDS[backend_name]
    scenario = next(s for s in default_scenarios(pool, dtype, 0) if s.name == "prefill")
    narrow = replace(scenario.geometry, size=slots, head_num=1, head_dim=8, v_head_dim=None)
    scenario = replace(scenario, geometry=narrow)
    suts = [SutChoice("builtin", ("reference", "torch"))]
    items = candidates_for(backend, "extend", suts, RunOptions(), pool, dtype)
    candidates = [item for item in items if not isinstance(item, Skip)]
    pool_cache.clear()
    results = benchmark.pedantic(
        check_cell,
        (scenario, backend, "extend", candidates, 30.0, tuple(ERAS)),
        rounds=5,
        iterations=1,
        warmup_rounds=1,
    )
    benchmark.extra_info.update(
        slots=slots, candidates=len(candidates), pool_cache=dict(pool_cache.CACHE.counts)
    )
    assert len(results) >= len(candidates) and all(r.findings == [] for r in results)


def test_examples_per_second(benchmark, profile: str, tmp_path, request) -> None:
    """`kvh run` of one cell at `profile`, in this process: examples/s is examples over the
    run's time (its regressions, reach scenario and report included), kept in extra_info."""
    examples = int(request.config.getoption("--kvh-examples"))
    pool, dtype, backend_name = CELL
    argv = ["run", "--pool", pool, "--dtype", dtype, "--backend", backend_name,
            "--examples", str(examples), "--profile", profile, "--out"]  # fmt: skip
    codes = []
    rounds = iter(range(1 << 30))

    def run() -> None:
        codes.append(main([*argv, str(tmp_path / f"run{next(rounds)}")]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(profile=profile, examples=examples, cell="/".join(CELL))
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["examples_per_s"] = examples / benchmark.stats.stats.mean
    assert codes and all(code == 0 for code in codes), codes


def test_draws_per_second(benchmark, profile: str, request) -> None:
    """The cell's Hypothesis draws at `profile` with a check that does nothing: the strategy,
    settings and exploration loop of test_examples_per_second without a pool, a judge or a
    comparison. Its draws/s bounds that test's examples/s: an example costs its draw plus its
    check, so examples/s over draws/s is the share of an example that the draw is."""
    examples = int(request.config.getoption("--kvh-examples"))
    pool, dtype, _ = CELL
    chosen = profile_named(profile)
    strategy = scenario_strategy(pool, dtype, False, chosen.pool_bytes)
    settings = Settings(chosen.settings(examples), database=None)  # no entries left behind
    drawn = []

    def draw() -> None:
        outcome = explore(strategy, lambda scenario: None, lambda checked: False, settings, 0,
                          f"draws/{profile}")  # fmt: skip
        drawn.append(outcome.generated)

    benchmark.pedantic(draw, rounds=1, iterations=1)
    benchmark.extra_info.update(profile=profile, examples=examples, cell="/".join(CELL))
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["draws_per_s"] = examples / benchmark.stats.stats.mean
    assert drawn == [examples], drawn  # every draw explored: none skipped, none failed
