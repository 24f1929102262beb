"""The mutation campaign (harness/run/release_mutation.py, mutants/generated.py): cosmic-ray's
mutants kept to the functions a trail reaches, each stage's run turned into a status (a
harness-caused raise is never a kill), the score and its survivors' classes; and on the installed
release, a seeded sample of one door's mutants judged end to end (its seed printed)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

from harness.run.release_copy import release_named, sparse_copy
from harness.run.release_mutation import (
    KILLED,
    KILLED_AT_LOAD,
    LIMITED,
    SURVIVED,
    status_of,
)
from harness.run.release_source import Slice, SliceResult, run_slice
from mutants.generated import generated_mutants, mutated_text
from mutants.mutation_survivors import STRETCHES, SURVIVORS, is_door, stamped
from reports.mutation_score import NOT_KILLED, score_lines, summary
from tests.conftest import REPO, run_kvh

# The sample CI judges: ten mutants of the MHA pool's door, on the cells that reach it.
CI_SEED, CI_SAMPLE, CI_DOOR = 3, 10, "MHATokenToKVPool.set_kv_buffer"
# mha alone: the sample draws one mutant (AddNot on the HND branch's `_is_cuda and ...`) that sends
# every mha_hnd check through the release's CUDA launcher on a CPU, 218 s of the sample's 308 s;
# the HND branch is the door campaign's to judge, not CI's. bf16 alone: fp8_e4m3 made the sample
# 79 s instead of 52 s, and the cast it adds is the door campaign's to judge too.
DOOR_UNIVERSE = ("--pool", "mha", "--dtype", "bf16", "--backend", "plain")
# Every mutant judged at both stages: measuring the reach (harness/run/mutant_reach.py) costs two
# coverage runs, 67 s of the sample's 118 s here, and the sample judges 10 mutants in 52 s without
# it. The reach's decisions are tested below on a module of their own.
CI_STAGES = ("--judge-unreached",)

POOL = """
class Pool:
    def set_kv_buffer(self, layer, loc, k, v):
        if layer > 0:
            return loc + 1
        return loc

    def unreached(self, x):
        return x * 2


def __getattr__(name):
    return name == "x"
"""


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "sglang"
    (package / "srt").mkdir(parents=True)
    (package / "srt" / "memory_pool.py").write_text(textwrap.dedent(POOL))
    (package / "srt" / "__init__.py").write_text("def __getattr__(name):\n    return 1 + 1\n")
    return package


def test_mutants_are_cosmic_ray_s_inside_the_reached_functions_only(tmp_path: Path) -> None:
    package = _package(tmp_path)
    door = "memory_pool.py Pool.set_kv_buffer"
    scope = generated_mutants(package, {door})
    assert scope.mutants and {m.function for m in scope.mutants} == {door}
    assert {m.operator for m in scope.mutants} >= {
        "core/ReplaceComparisonOperator_Gt_Lt", "core/ReplaceBinaryOperator_Add_Sub",
        "core/NumberReplacer",
    }  # fmt: skip
    assert len({m.id for m in scope.mutants}) == len(scope.mutants)
    # A trail names `__init__.py __getattr__`: one file defines it, then two. Counted, not guessed.
    reached = {door, "__init__.py __getattr__"}
    assert "__init__.py __getattr__" in {
        m.function for m in generated_mutants(package, reached).mutants
    }
    (package / "__init__.py").write_text("def __getattr__(name):\n    return 2\n")
    again = generated_mutants(package, reached)
    assert again.unplaced == {"__init__.py __getattr__": 2}
    assert {m.function for m in again.mutants} == {door}


def test_a_mutant_applied_is_its_one_edit(tmp_path: Path) -> None:
    package = _package(tmp_path)
    scope = generated_mutants(package, {"memory_pool.py Pool.set_kv_buffer"})
    text = (package / "srt" / "memory_pool.py").read_text()
    (mutant,) = [m for m in scope.mutants if m.operator == "core/ReplaceBinaryOperator_Add_Sub"]
    after = mutated_text(text, mutant)
    assert "return loc - 1" in after and after.replace("loc - 1", "loc + 1") == text


def _slice(verdict: str, plan: dict, findings: int = 0, checks: int = 1) -> SliceResult:
    return SliceResult(
        verdict, 0, (), checks, findings, ("memory_pool.py:3 raised",), 1.0, "", plan
    )


KEY = ("plain", "mha", "bf16", "sglang", "real", "current", "s", "decode")
CELLS = Slice(("mha",), ("bf16",), ("plain",))


def test_each_stage_s_run_comes_to_one_status() -> None:
    reference = _slice("PASS", {KEY: ("pass", "", "", ""), KEY[:-1] + ("x",): ("pass", "", "", "")})
    same = _slice("PASS", dict(reference.plan))
    assert status_of(same, reference, CELLS, "")[0] == SURVIVED
    found = _slice("FINDING", dict(reference.plan), findings=1, checks=2)
    assert status_of(found, reference, CELLS, "")[0] == KILLED
    everywhere = _slice("FINDING", dict(reference.plan), findings=2, checks=2)
    assert status_of(everywhere, reference, CELLS, "")[0] == KILLED_AT_LOAD
    load = _slice("ERROR", {})
    said = "kvh: error: worker refused: load failed: sglang failed to import: TypeError: x"
    assert status_of(load, reference, CELLS, said)[0] == KILLED_AT_LOAD
    missing = "sglang failed to import: ModuleNotFoundError: No module named 'x'"
    assert status_of(load, reference, CELLS, missing)[0] == LIMITED
    limit = dict(reference.plan)
    limit[KEY] = ("skipped", "skipped", "import here", "")
    assert status_of(_slice("PASS", limit), reference, CELLS, "")[0] == LIMITED


def test_the_score_counts_kills_over_what_is_neither_equivalent_nor_out_of_reach() -> None:
    def record(status: str, function: str = "memory_pool.py P.set_kv_buffer") -> dict:
        return {"id": f"f.py:{status}:0", "file": "f.py", "function": function,
                "operator": "core/NumberReplacer", "status": status, "line": 1,
                "diff": "+    x = 1", "cells": {"pools": ["mha"]}}  # fmt: skip

    statuses = ("killed", "killed_ci", "survived", "survived", "limited", "survived")
    rows = [stamped(record(s), "sglang==0") for s in statuses]
    rows[3]["survivor_class"] = "equivalent"
    rows[5]["survivor_class"] = "outside the write path"  # attention math: not scored either
    got = summary(rows)
    assert (got["scored"], got["limited"], got["unexplained"]) == (3, 1, 1)
    assert got["outside_write"] == 1
    assert got["score"] == pytest.approx(2 / 3)
    assert (
        rows[0]["door"] and rows[0]["mutant"] == "f.py:killed:0" and rows[0]["cells"] == "mha x  x "
    )
    printed = "\n".join(score_lines(rows, "sglang==0"))
    assert "66.7% (3 scored of 6 mutants)" in printed and "#### unexplained: 1" in printed
    assert is_door("memory_pool.py MHATokenToKVPool.set_kv_buffer")
    assert is_door("swa_memory_pool.py SWAKVPool.set_mla_kv_buffer")
    assert not is_door("triton_backend.py TritonAttnBackend._set_kv_buffer")


def test_an_unreached_mutant_counts_against_the_score_unless_measured_or_read() -> None:
    """An UNREACHED mutant (a statement no check ran) is never a kill: it is scored as a survivor,
    explained only where its statement was measured unable to run here or a stretch read in the
    release covers it, and a stretch never excuses a mutant a check ran."""
    from mutants.mutation_survivors import STRETCHES

    stretch = STRETCHES[0]

    def record(status: str, line: int, cannot_run_here: str = "") -> dict:
        return {"id": f"f.py:{status}:{line}", "file": "f.py", "function": stretch.function,
                "operator": "core/NumberReplacer", "status": status, "line": line,
                "diff": "+    x = 1", "cells": {}, "cannot_run_here": cannot_run_here}  # fmt: skip

    rows = [
        stamped(record("killed", stretch.first), "sglang", stretch.release),
        stamped(record("unreached", stretch.first), "sglang", stretch.release),
        stamped(record("survived", stretch.first), "sglang", stretch.release),
        stamped(record("unreached", 1), "sglang", stretch.release),
        stamped(record("unreached", 1, "`if _is_cuda` is False here"), "sglang", stretch.release),
    ]
    assert [r["survivor_class"] for r in rows] == [
        "",
        stretch.kind,
        "",
        "",
        "out of reach on a CPU",
    ]
    got = summary(rows)
    assert got["unreached"] == 3 and got["unexplained"] == 2
    # Killed 1, the survivor and the unread unreached mutant: the stretch's kind decides the rest.
    scored = 3 + (stretch.kind == "gap")
    assert got["scored"] == scored and got["score"] == pytest.approx(1 / scored)


def test_kvh_report_shows_the_score_its_survivors_and_its_history(tmp_path: Path) -> None:
    from reports.records import records_frame
    from reports.store import append, run_meta

    def row(status: str, diff: str) -> dict:
        record = {"id": f"srt/p.py:core/X:{status}", "file": "srt/p.py", "status": status,
                  "function": "p.py Pool.set_kv_buffer", "operator": "core/X", "line": 3,
                  "diff": diff, "cells": {}}  # fmt: skip
        return stamped(record, "sglang==0.5.23")

    campaigns = (("2026-12-01", ("killed", "survived")), ("2026-12-02", ("killed", "killed")))
    for day, statuses in campaigns:  # two campaigns: the history shows both
        rows = [row(s, f"+    kvh_mutated_{s}()") for s in statuses]
        meta = {**run_meta("cpu", 0, "", "sglang==0.5.23"), "time": f"{day}T00:00:00+00:00"}
        append(tmp_path, records_frame("mutation", rows), "mutation", meta)
    done = run_kvh("report", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "Mutation score of sglang==0.5.23: 100.0% of 2 scored" in done.stdout, done.stdout
    page = (tmp_path / "report" / "dashboard.html").read_text()
    assert '<a href="#mutation">what kvh would not notice</a>' in page
    assert page.count("sglang==0.5.23</td>") == 2  # both campaigns in the history table


@pytest.mark.slow
@pytest.mark.sglang
def test_a_raise_the_harness_causes_in_the_door_is_no_kill(tmp_path: Path) -> None:
    """A mutant that imports a module this machine lacks inside the door: every write raises
    ModuleNotFoundError, which the harness causes (harness/compare/error_causes.py)."""
    from harness.run.release_copy import release_folder

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    source = release_folder("sglang")
    pool = Path("sglang/srt/mem_cache/memory_pool.py")
    copy = sparse_copy(source, tmp_path / "release", [pool], with_siblings=False)
    text = (copy / pool).read_text()
    door = "    def set_kv_buffer(\n        self,\n"
    at = text.index(door, text.index("class MHATokenToKVPool("))
    body = text.index(":\n", text.index(")", at)) + 2
    planted = text[:body] + "        import kvh_no_such_module  # noqa\n" + text[body:]
    (copy / pool).unlink()
    (copy / pool).write_text(planted)
    cells = Slice(("mha",), ("bf16",), ("plain",))
    reference = run_slice("sglang", cells, tmp_path / "out-release")
    judged = run_slice(f"sglang@{copy}", cells, tmp_path / "out-mutant")
    status, detail, _ = status_of(judged, reference, cells, "")
    assert status == LIMITED and "import here" in detail, (status, detail, judged.detail)


def _stored_campaigns() -> list[Path]:
    return sorted((REPO / "docs" / "mutation").glob("*.json"))


def test_a_campaign_is_stored_for_the_survivor_check() -> None:
    """Without a stored campaign the check below would have nothing to hold (an empty parameter
    set is a skip)."""
    assert _stored_campaigns(), "no campaign under docs/mutation/"


@pytest.mark.parametrize("stored", _stored_campaigns(), ids=lambda p: p.stem)
def test_every_stored_survivor_is_classified(stored: Path) -> None:
    campaign = json.loads(stored.read_text())
    release = campaign["release"]
    unexplained = [
        r["id"] for r in campaign["records"]
        if r["status"] in NOT_KILLED
        and not stamped(r, release, release_named(release))["survivor_class"]
    ]  # fmt: skip
    assert not unexplained, f"{len(unexplained)} unclassified survivors, first: {unexplained[:3]}"
    assert all(s.reason for s in SURVIVORS) and all(s.reason for s in STRETCHES)


@pytest.mark.slow
@pytest.mark.sglang
def test_a_seeded_sample_of_a_door_s_mutants_is_judged(tmp_path: Path, record_property) -> None:
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    record_property(
        "mutation_campaign",
        f"--seed {CI_SEED} --sample {CI_SAMPLE} {' '.join(DOOR_UNIVERSE + CI_STAGES)}",
    )
    done = run_kvh(
        "mutants", "--sut", "sglang", "--mutate", "--function", CI_DOOR, "--sample",
        str(CI_SAMPLE), "--seed", str(CI_SEED), *DOOR_UNIVERSE, *CI_STAGES, "--out", str(tmp_path),
        timeout=1500,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    assert f"(--seed {CI_SEED})" in done.stderr
    stored = json.loads((tmp_path / "release-mutation.json").read_text())
    assert len(stored["records"]) == CI_SAMPLE
    assert all(CI_DOOR in r["function"] and r["diff"] for r in stored["records"])
    assert any(r["status"] == KILLED for r in stored["records"]), stored["records"]
    # Resumed: nothing is judged twice.
    again = run_kvh(
        "mutants", "--sut", "sglang", "--mutate", "--function", CI_DOOR, "--sample",
        str(CI_SAMPLE), "--seed", str(CI_SEED), *DOOR_UNIVERSE, *CI_STAGES, "--out", str(tmp_path),
        "--resume", timeout=1500,
    )  # fmt: skip
    assert f"--resume: {CI_SAMPLE} of {CI_SAMPLE} already decided" in again.stderr, again.stderr


def test_a_resume_of_a_finished_campaign_needs_no_judge(tmp_path: Path) -> None:
    """`--resume` where the book decided every mutant it drew prints the score without preparing
    the unmodified release's judges; a book with a mutant left, or other arguments, does not."""
    from cosmic_ray.work_db import WorkDB
    from cosmic_ray.work_item import MutationSpec, WorkerOutcome, WorkItem, WorkResult

    from harness.cli.release_mutation import ARGUMENTS, BOOK, _finished

    started = {"release": "sglang==0.5.23", "seed": 3}
    (tmp_path / ARGUMENTS).write_text(json.dumps(started))
    book = WorkDB(str(tmp_path / BOOK), WorkDB.Mode.create)
    spec = MutationSpec("m.py", "core/NumberReplacer", 0, (1, 0), (1, 1))
    book.add_work_items([WorkItem.single(id, spec) for id in ("a", "b")])
    book.set_result("a", WorkResult(worker_outcome=WorkerOutcome.NORMAL, output="{}"))
    book.close()
    assert _finished(tmp_path, started) is None  # "b" is left to judge
    book = WorkDB(str(tmp_path / BOOK), WorkDB.Mode.open)
    book.set_result("b", WorkResult(worker_outcome=WorkerOutcome.NORMAL, output="{}"))
    book.close()
    assert _finished(tmp_path, {**started, "seed": 4}) is None  # another campaign's book
    finished = _finished(tmp_path, started)
    assert finished is not None and len(list(finished.results)) == 2
    finished.close()


@pytest.mark.sglang
def test_survivors_of_the_installed_release_are_read_against_its_version(tmp_path: Path) -> None:
    """`--sut sglang` and `sglang@DIR` are scored with the records of the release they are (its
    dist-info's version), so a CI sample's survivors are explained as `sglang==X`'s; a folder that
    says no version keeps its spec, whose survivors no record explains."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    version = importlib.metadata.version("sglang")
    assert release_named("sglang") == f"sglang=={version}"
    assert release_named("sglang==0.5.14") == "sglang==0.5.14"
    (tmp_path / "sglang").mkdir()
    assert release_named(f"sglang@{tmp_path}") == f"sglang@{tmp_path}"
    record = next(s for s in SURVIVORS if s.release == f"sglang=={version}")
    survived = {"id": record.id, "status": "survived", "diff": f"+{record.mutated}",
                "function": "memory_pool.py MHATokenToKVPool.set_kv_buffer"}  # fmt: skip
    row = stamped(survived, "sglang", release_named("sglang"))
    assert row["sut"] == "sglang" and row["survivor_class"] == record.kind


def test_a_record_names_the_mutant_s_copy_not_this_machine_s_path(tmp_path: Path) -> None:
    """A judge's message names the mutant's scratch folder (under --out, this machine's path);
    the records are stored in the repository, so they name it as MUTANT_COPY instead."""
    from harness.run.release_mutation import MUTANT_COPY, portable_detail

    scratch = tmp_path / "work" / "mutant-0123456789ab"
    said = f"SUT worker for {scratch}/release did not start: worker crashed: exit code -6"
    assert portable_detail(said, scratch) == (
        f"SUT worker for {MUTANT_COPY}/release did not start: worker crashed: exit code -6"
    )
    assert str(tmp_path) not in portable_detail(said, scratch)


def test_no_stored_campaign_names_a_path_of_the_machine_that_ran_it() -> None:
    for stored in _stored_campaigns():
        records = json.loads(stored.read_text())["records"]
        assert not [r["id"] for r in records if "/.cache/" in r.get("detail", "")], stored.name
