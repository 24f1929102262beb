"""Which stage of a mutation campaign judges a mutant (harness/run/mutant_reach.py), and what a
carried decision, a judge a signal stopped and a judge the release crashed come to
(harness/run/release_mutation.py, harness/cli/release_mutation.py)."""

from __future__ import annotations

import ast
import json
import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest

from mutants.generated import GeneratedMutant


def test_a_mutant_s_statement_is_the_innermost_one_in_a_function_body(tmp_path: Path) -> None:
    from harness.run.mutant_reach import CI_ONLY, FIRST, UNREACHED, Ran, Reach, body_statement

    text = (
        "class P:\n"  # 1
        "    def door(self, loc, k=0):\n"  # 2: a default runs at import
        "        if loc is None:\n"  # 3
        "            raise ValueError(\n"  # 4
        "                'x' * 2)\n"  # 5
        "        try:\n"  # 6
        "            k = k + 1\n"  # 7
        "        except KeyError:\n"  # 8
        "            k = 0\n"  # 9
        "        return k\n"  # 10
    )
    tree = ast.parse(text)
    assert [body_statement(tree, line) for line in range(1, 11)] == [
        None,
        None,
        3,
        4,
        4,
        6,
        7,
        6,
        9,
        10,
    ]
    package = tmp_path
    (package / "p.py").write_text(text)
    statements = {"p.py": {3, 4, 6, 7, 9, 10}}
    first = Ran({"p.py": {3, 6, 7, 10}}, statements, {"p.py": {9: "`if _is_cuda` is False"}})
    ci = Ran({"p.py": {3, 4, 6, 7, 10}}, statements, {})
    reach = Reach(first, ci, package)

    def of(line: int) -> tuple[str, int, str]:
        return reach.of(GeneratedMutant("p.py", "p.py P.door", "core/X", 0, line, 0, (line, 1)))

    assert of(2) == (FIRST, 2, "")  # the def line: judged
    assert of(7) == (FIRST, 7, "")
    assert of(5) == (CI_ONLY, 4, "")
    assert of(9) == (UNREACHED, 9, "`if _is_cuda` is False")
    assert reach.of(GeneratedMutant("q.py", "q.py f", "core/X", 0, 1, 0, (1, 1)))[0] == FIRST


def test_carry_takes_a_campaign_s_decisions_of_its_universe_and_kills_of_a_part_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli.release_mutation import _carried

    started = {"release": "sglang==0.5.23", "universe": {"pools": ["mha"]}}
    record = {"id": "srt/p.py:core/X:0", "file": "srt/p.py", "function": "p.py P.set_kv_buffer",
              "operator": "core/X", "occurrence": 0, "line": 3, "status": "killed",
              "diff": "+    x = 1", "cells": {}, "seconds": 2.0}  # fmt: skip
    stored = tmp_path / "release-mutation.json"
    stored.write_text(json.dumps({**started, "records": [record]}))

    def mutant(occurrence: int, line: int) -> GeneratedMutant:
        return GeneratedMutant(
            "srt/p.py", record["function"], "core/X", occurrence, line, 0, (3, 1)
        )

    carried = _carried(stored, started, [mutant(0, 3), mutant(0, 4), mutant(1, 3)])
    assert [(c.id, c.status, c.line) for c in carried] == [(record["id"], "killed", 3)]
    other = {**started, "universe": {"pools": ["mla"]}}
    with pytest.raises(Exception, match="another universe"):
        _carried(stored, other, [mutant(0, 3)])
    # From a campaign over a part of the universe, only its kills.
    wider = {**started, "universe": {"pools": ["mha", "mla"]}}
    assert [c.id for c in _carried(stored, wider, [mutant(0, 3)])] == [record["id"]]
    stored.write_text(json.dumps({**started, "records": [{**record, "status": "survived"}]}))
    assert _carried(stored, wider, [mutant(0, 3)]) == []
    assert len(_carried(stored, started, [mutant(0, 3)])) == 1
    # And its survivors whose record says no cell tells them apart (here equivalent: the masked
    # kernel's grid of N programs), where one whose record says gap is judged again.
    pool = "srt/mem_cache/memory_pool.py:core/"
    equivalent = {**record, "status": "survived", "id": pool + "ReplaceComparisonOperator_GtE_Eq:9",
                  "diff": "+        if pid == N:"}  # fmt: skip
    gap = {**record, "status": "survived", "id": pool + "ReplaceContinueWithBreak:3",
           "diff": "+                break"}  # fmt: skip
    stored.write_text(json.dumps({**started, "records": [equivalent, gap]}))
    drawn = [
        GeneratedMutant("srt/mem_cache/memory_pool.py", "f", op, occurrence, 3, 0, (3, 1))
        for op, occurrence in (("core/ReplaceComparisonOperator_GtE_Eq", 9),
                               ("core/ReplaceContinueWithBreak", 3))
    ]  # fmt: skip
    assert [c.id for c in _carried(stored, wider, drawn)] == [equivalent["id"]]
    # A gap whose record names what closed it is judged again, even from the same universe.
    shift = "core/ReplaceBinaryOperator_Mul_LShift"
    shifted_line = "+        if self.cp_size <= 1 or num_tokens < self.cp_size << 2:"
    closed = {**record, "status": "survived", "id": f"srt/layers/cp/zigzag.py:{shift}:0",
              "diff": shifted_line}  # fmt: skip
    stored.write_text(json.dumps({**started, "records": [closed]}))
    shifted = GeneratedMutant("srt/layers/cp/zigzag.py", "f", shift, 0, 3, 0, (3, 1))
    assert _carried(stored, started, [shifted]) == []
    stored.write_text(json.dumps({**started, "records": [{**closed, "status": "killed"}]}))
    assert len(_carried(stored, started, [shifted])) == 1
    # So is an unreached mutant whose stretch (no record names it) is a gap closed since.
    from mutants import mutation_survivors
    from mutants.survivor_record import GAP, Stretch

    unreached = {**record, "status": "unreached", "function": "p.py f", "line": 7, "diff": ""}
    stored.write_text(json.dumps({**started, "records": [unreached]}))
    drawn = [GeneratedMutant("srt/p.py", "p.py f", "core/X", 0, 7, 0, (7, 1))]
    stretch = Stretch(started["release"], "p.py f", 5, 9, GAP, "a branch no scenario took")
    monkeypatch.setattr(mutation_survivors, "STRETCHES", (stretch,))
    assert len(_carried(stored, started, drawn)) == 1
    closed = (replace(stretch, closed_by="a scenario that takes it"),)
    monkeypatch.setattr(mutation_survivors, "STRETCHES", closed)
    assert _carried(stored, started, drawn) == []


def test_a_judge_a_signal_stops_says_so_and_the_campaign_stops_undecided(tmp_path: Path) -> None:
    """A CI timeout's SIGTERM reaches the whole process group, the judges first: a judge stopped
    so exits 143, and the campaign takes it as its own stop, not as its mutant's LIMITED."""
    from harness.exit_codes import EXIT_TERMINATED, Interrupted
    from harness.run.forked_judges import Judges
    from harness.run.release_mutation import campaign
    from harness.run.release_source import SliceResult

    judges = Judges(tmp_path)

    def stopped() -> None:
        raise Interrupted(signal.SIGTERM)

    judges.start(stopped, tmp_path / "judge.log")
    assert judges.wait_any()[1] == EXIT_TERMINATED

    class StoppedJudges(Judges):
        def start(self, argv, log: Path) -> int:
            return super().start(stopped, log)

    decided = []
    mutant = GeneratedMutant("srt/p.py", "p.py f", "core/X", 0, 1, 0, (1, 1))
    reference = SliceResult("PASS", 0, (), 1, 0, (), 0.0, "")
    with pytest.raises(Interrupted):
        campaign(
            "sglang", [mutant], reference, StoppedJudges(tmp_path), tmp_path, 1, decided.append
        )
    assert decided == []


def test_a_warm_judge_the_release_crashes_is_judged_again_cold(tmp_path: Path) -> None:
    """A warm judge runs the mutant's copy in its own process: a crash there (an interpreted
    kernel's stray pointer) ends the judge, so the stage is judged again cold, where the copy runs
    in its SUT worker and kvh run reports the crash as a finding."""
    import faulthandler
    import os

    from harness.run.forked_judges import Judges
    from harness.run.release_mutation import MUTATED, campaign, crashed
    from harness.run.release_source import SliceResult

    assert crashed(-signal.SIGSEGV) and crashed(-signal.SIGABRT)
    assert not crashed(-signal.SIGKILL) and not crashed(-signal.SIGTERM) and not crashed(1)
    cold_starts = []

    class CrashingJudges(Judges):
        def start(self, argv, log: Path, cold=None) -> int:
            if cold:
                cold_starts.append(argv)
                return super().start(lambda: None, log)  # ends 0, unjudged
            scratch = log.parent

            def crash() -> None:
                cells = {"pools": ["mha"], "dtypes": ["bf16"], "backends": ["plain"]}
                said = {"applied": True, "cells": cells, "diff": "+    x = 1"}
                (scratch / MUTATED).write_text(json.dumps(said))
                faulthandler.disable()  # pytest's would print the crash on the test's output
                os.kill(os.getpid(), signal.SIGSEGV)

            return super().start(crash, log)

    decided = []
    mutant = GeneratedMutant("srt/p.py", "p.py f", "core/X", 0, 1, 0, (1, 1))
    reference = SliceResult("PASS", 0, (), 1, 0, (), 0.0, "")
    campaign("sglang", [mutant], reference, CrashingJudges(tmp_path), tmp_path, 1, decided.append)
    assert len(cold_starts) == 1 and cold_starts[0][:2] == ["run", "--sut"]
    assert [d.status for d in decided] == ["limited"]  # the cold judge here wrote no verdict


def test_a_judge_that_asks_for_more_memory_than_its_limit_fails_in_the_frame_that_asked(
    tmp_path: Path,
) -> None:
    """A mutant that makes a rank allocate gigabytes ends as an allocation error in its own
    process, which the run judges, instead of taking this machine's memory from its neighbours."""
    from harness.run.forked_judges import JUDGE_DATA_BYTES, Judges

    def allocate_past_the_limit() -> None:
        import torch

        try:
            torch.empty(JUDGE_DATA_BYTES + (1 << 30), dtype=torch.uint8)
            said = "allocated"
        except RuntimeError as refused:
            said = f"refused: {refused}"
        os.write(1, said.encode())  # the judge's log: pytest holds sys.stdout

    judges = Judges(tmp_path)
    judges.start(allocate_past_the_limit, tmp_path / "judge.log")
    _, rc, output = judges.wait_any()
    assert rc == 0
    assert "refused:" in output and "can't allocate memory" in output, output
