"""Exploration never ends in an exception of its own: a scenario that fails on its first
execution and not on its replay (a SUT with state between calls), or several distinct
failures, are reported as findings with their repros, and `kvh run` exits 1, not 3."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hypothesis import settings as Settings
from hypothesis import strategies as st

from scenarios.explore import explore
from scenarios.profiles import profile_named


def test_a_failure_that_does_not_replay_is_kept_as_a_failure():
    calls: list[int] = []

    def check(n: int) -> bool:  # the first check fails, no other does
        calls.append(n)
        return len(calls) == 1

    outcome = explore(
        st.integers(7, 100),
        check,
        lambda failed: failed,
        profile_named("ci").settings(max_examples=5),
        seed=0,
        key="flaky-first-call",
    )
    assert len(outcome.failures) == 1 and len(calls) > 1
    failure = outcome.failures[0]
    assert failure.scenario == calls[0] and failure.results is True and not failure.replayed


def test_distinct_failures_are_each_kept():
    outcome = explore(
        st.integers(-100, 100),
        lambda n: n,
        lambda n: n < -10 or n > 10,
        Settings(profile_named("ci").settings(max_examples=200), report_multiple_bugs=True),
        seed=0,
        key="two-bugs",
    )
    kept = sorted(failure.scenario for failure in outcome.failures)
    assert kept and all(failure.replayed for failure in outcome.failures)
    assert all(n < -10 or n > 10 for n in kept)


def test_an_error_of_the_harness_itself_still_propagates():
    def broken(n: int) -> bool:
        raise KeyError("the harness's own bug")

    with pytest.raises(KeyError):
        explore(
            st.integers(0, 3),
            broken,
            bool,
            profile_named("ci").settings(max_examples=3),
            seed=0,
            key="harness-bug",
        )


# A SUT whose MHA pool writes wrong bytes the first time it sees a write and never again: state
# kept between calls, as a release with a cache would. Hypothesis's replay then passes.
FIRST_SIGHT_ONLY = """
from pools.builtin.sut import builtin_module
_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool, SWAKVPool = _base.MLATokenToKVPool, _base.SWAKVPool
_seen = set()
class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, k, v, *args, **kwargs):
        loc = unwrap_write_loc(loc_info)[0]
        key = (tuple(loc.tolist()), tuple(k.shape), k.float().sum().item())
        first = key not in _seen
        _seen.add(key)
        super().set_kv_buffer(layer, loc_info, k.flip(0) if first else k, v, *args, **kwargs)
"""


@pytest.mark.e2e
@pytest.mark.slow
def test_a_run_whose_scenario_fails_only_on_its_first_execution_exits_1(tmp_path):
    out = tmp_path / "out"
    sut = tmp_path / "first_sight_only.py"
    sut.write_text(textwrap.dedent(FIRST_SIGHT_ONLY))
    command = [
        sys.executable, "-m", "harness", "run", "--sut", str(sut), "--profile", "ci",
        "--pool", "mha", "--dtype", "bf16", "--backend", "plain", "--examples", "4",
        "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "flaky" in done.stdout, done.stdout[-3000:]
    assert "internal error" not in done.stderr
    assert list((out / "repros").glob("*.json"))
