"""Throughput of the differential itself: one example (a scenario through the baseline in every
era the era table needs, and through every builtin candidate, judged), and its parts, so a run's
examples/s can be read against what bounds it.

`python -m pytest benchmarks/test_differential_bench.py --benchmark-columns=mean,ops`: `ops` of
`example` is examples/s on one cell; `baselines` and `candidates` are its two halves (the judge's
per-token loop against the store engines and oracles).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from backends.registry import BACKENDS
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.run.baselines import decide, run_baselines
from harness.run.cells import check_cell, execute_candidate
from pools.builtin.eras import ERAS
from pools.kinds.token_major import MHA, MLA, SWA_MHA
from scenarios.defaults import default_scenarios
from scenarios.model import Scenario

# (pool, dtype, backend); "mha-large" is the mha prefill in a 2^17-slot pool of narrow rows, the
# size the ci profile reaches: what pool allocation, canaries and the untouched scan cost.
CELLS = [
    (MHA.name, "bf16", "plain"),
    ("mha-large", "bf16", "plain"),
    (SWA_MHA.name, "bf16", "fa3"),
    (MLA.name, "bf16", "triton"),
]


def _large(scenario: Scenario) -> Scenario:
    narrow = replace(scenario.geometry, size=2**17, head_num=1, head_dim=8, v_head_dim=None)
    return replace(scenario, geometry=narrow)


def _cell(pool: str, dtype: str, backend_name: str):
    backend = BACKENDS[backend_name]
    base = pool.removesuffix("-large")
    scenario = next(s for s in default_scenarios(base, dtype, 0) if s.name == "prefill")
    scenario = _large(scenario) if pool.endswith("-large") else scenario
    pool = base
    suts = [SutChoice("builtin", ("reference", "torch"))]
    items = candidates_for(backend, "extend", suts, RunOptions(), pool, dtype)
    return backend, scenario, [item for item in items if not isinstance(item, Skip)]


@pytest.mark.parametrize("pool, dtype, backend_name", CELLS)
def test_example(benchmark, pool: str, dtype: str, backend_name: str) -> None:
    backend, scenario, candidates = _cell(pool, dtype, backend_name)
    results = benchmark(check_cell, scenario, backend, "extend", candidates, 30.0, tuple(ERAS))
    benchmark.extra_info.update(candidates=len(candidates), rows=len(results))
    assert len(results) >= len(candidates) and all(r.findings == [] for r in results)


@pytest.mark.parametrize("pool, dtype, backend_name", CELLS)
def test_baselines(benchmark, pool: str, dtype: str, backend_name: str) -> None:
    backend, scenario, _ = _cell(pool, dtype, backend_name)
    baselines = benchmark(run_baselines, scenario, backend, "extend", tuple(ERAS), 30.0)
    assert set(baselines.runs) == set(backend.eras)


@pytest.mark.parametrize("pool, dtype, backend_name", CELLS)
def test_candidates(benchmark, pool: str, dtype: str, backend_name: str) -> None:
    backend, scenario, candidates = _cell(pool, dtype, backend_name)
    baselines = run_baselines(scenario, backend, "extend", tuple(ERAS), 30.0)

    def judged() -> list:
        return [
            decide(
                baselines,
                candidate,
                execute_candidate(
                    candidate, scenario, baselines.runs[candidate.era], 30.0, backend
                ),
            )
            for candidate in candidates
        ]

    verdicts = benchmark(judged)
    assert all(not verdict.findings for verdict in verdicts)
