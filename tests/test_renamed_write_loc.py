"""A release that renames KVWriteLoc's fields or its unwrap helper, with every reader, writes the
same bytes, so it keeps its era and passes (issue 39's refactor catalogue): the era is decided by
the fields' order and the helper's behaviour (harness/sut/probe/detect.py, unwrap_helper.py),
and the call-site models name the constructors' keywords as the SUT does (backends/era_calls.py)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.deterministic import run
from harness.sut.load.loader import load_foreign
from harness.sut.probe.detect import detect
from harness.sut.probe.unwrap_helper import unwrap_helper
from reports.outcome import Outcome, SkipKind
from tests.conftest import FIXTURES

RENAMED = FIXTURES / "release_renamed_write_loc.py"


def test_renamed_fields_and_helper_keep_the_current_era():
    loaded = load_foreign(str(RENAMED))
    assert loaded.era == "current", loaded.unfit
    assert loaded.capabilities.write_loc_fields == ("loc", "swa_slot", "full_slot", "physical")
    assert loaded.capabilities.unwrap_arity == 3  # split_write_loc, found by what it does
    assert loaded.capabilities.cuts_to_loc_len is True  # read through the second field


def test_every_write_of_the_renamed_release_ends_as_the_builtin_current_pools_do():
    pools = ("mha", "swa_mha")
    options = RunOptions(
        suts=["builtin:torch", str(RENAMED)],
        pools=list(pools),
        dtypes=["bf16"],
        eras=["current"],
        backends=["plain", "fa3", "triton"],  # for_layer, and for_batch with and without swa
        era_table=False,
    )
    results: list = []
    run(options, resolve_suts(options), results.append)
    outcomes: dict[str, dict] = {"builtin": {}, "renamed": {}}
    for r in results:
        if r.candidate is not None and not (r.skip and r.skip.kind is SkipKind.BY_DESIGN):
            side = "builtin" if r.candidate.sut == "builtin" else "renamed"
            key = (r.pool, r.candidate.backend, r.candidate.mode, r.scenario.name)
            outcomes[side][key] = r.outcome
    # The same pools under other names: each check ends as the builtin current pools' does.
    assert outcomes["renamed"] == outcomes["builtin"]
    passed = {key[:2] for key, outcome in outcomes["renamed"].items() if outcome is Outcome.PASS}
    assert passed == {(pool, backend) for pool in pools for backend in options.backends}


def _module_from(tmp_path: Path, source: str):
    path = tmp_path / "renamed_bundled.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("renamed_bundled", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUNDLED = """
    from dataclasses import dataclass
    from typing import Any, Optional


    @dataclass
    class KVWriteLoc:
        loc: Any
        swa_slot: Optional[Any] = None


    def write_loc_is_marked(loc_info):  # one argument, names KVWriteLoc, returns no tuple
        return isinstance(loc_info, KVWriteLoc)


    def split_write_loc(loc_info):
        if isinstance(loc_info, KVWriteLoc):
            return loc_info.loc, loc_info.swa_slot
        return loc_info, None


    MHATokenToKVPool = MLATokenToKVPool = SWAKVPool = object
"""


def test_a_renamed_two_field_write_loc_and_helper_are_the_bundled_era(tmp_path):
    module = _module_from(tmp_path, BUNDLED)
    assert unwrap_helper(module, module.KVWriteLoc) is module.split_write_loc
    era, capabilities, unfit = detect(module)
    assert (era, capabilities.unwrap_arity) == ("bundled", 2), unfit


def test_a_two_field_write_loc_without_any_unwrap_helper_is_refused_with_its_reason(tmp_path):
    module = _module_from(tmp_path, BUNDLED.replace("def split_write_loc", "def _gone"))
    module._gone = lambda loc_info, extra: None  # two parameters: not an unwrap helper
    era, _, unfit = detect(module)
    assert era is None and "unwrap helper returns unknown" in unfit
