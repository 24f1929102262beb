"""A planted fault shrinks to its minimal scenario, and the saved JSON replays it, twice."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.plan.baseline import baseline_for
from harness.plan.candidate import Candidate
from harness.report.repro_files import save_repro
from harness.run.cells import check_scenario, has_findings
from harness.run.replay import replay
from harness.sut.load.loader import load_foreign
from reports.outcome import Outcome
from scenarios.explore import explore
from scenarios.profiles import profile_named
from scenarios.strategies import scenarios
from tests.conftest import FIXTURES


def _explored(shrink: bool):
    """The planted page-tail fault explored at ci (60 examples, seed 0), shrinking or not."""
    fixture = str(FIXTURES / "scenario_drop_page_tail.py")
    baseline = baseline_for(BACKENDS["plain"], "extend")
    candidate = Candidate(
        fixture, load_foreign(fixture).module, "current", "-", "cpu", "plain", "extend"
    )
    outcome = explore(
        scenarios("mha", "bf16", pool_bytes=2**18),
        lambda s: check_scenario(s, baseline, [candidate], 30.0),
        has_findings,
        profile_named("ci").settings(max_examples=60, shrink=shrink),
        seed=0,
        key="test-shrink",
    )
    assert outcome.scenario is not None, f"no failure in {outcome.examples} examples"
    return outcome


@pytest.fixture(scope="module")
def shrunk():
    return _explored(shrink=True)


def test_a_store_dropping_each_page_tail_shrinks_to_one_page_one_layer_fewest_tokens(shrunk):
    scenario = shrunk.scenario
    g = scenario.geometry
    assert g.layer_num == 1 and len(scenario.forwards) == 1
    forward = scenario.forwards[0]
    written = [slot for slot in forward.loc[: forward.tokens] if slot]
    # The fewest tokens that show it: the page's last slot alone, or the whole page up to it.
    assert written and len({slot // g.page_size for slot in written}) == 1
    assert written[-1] % g.page_size == g.page_size - 1
    assert len(written) in (1, g.page_size)
    assert shrunk.blob and shrunk.blob.startswith("@reproduce_failure(")


def test_the_shrunk_scenario_replays_from_its_json_on_two_runs(shrunk, tmp_path):
    failing = [result for result in shrunk.failure if result.outcome is Outcome.FINDING][0]
    path = save_repro(tmp_path, failing)
    for _ in range(2):
        _, recorded, result = replay(path)
        assert result.outcome is Outcome.FINDING
        assert [f.headline() for f in result.findings] == [f.headline() for f in recorded]


def test_without_shrinking_a_failure_is_reported_as_drawn(shrunk):
    """`kvh run --no-shrink` (a mutation campaign's judges): the first failing draw is the
    failure; no shrinking step runs, only its replay."""
    outcome = _explored(shrink=False)
    assert outcome.examples <= outcome.generated + 2 < shrunk.examples, (
        outcome.examples,
        outcome.generated,
        shrunk.examples,
    )
