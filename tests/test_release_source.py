"""The release-source catalogue: its transforms apply (or say they do not), and one refactor and
one fault on the installed SGLang come out as the catalogue expects."""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness.run.release_copy import copy_release, release_folder, sparse_copy
from harness.run.release_source import (
    RESULTS,
    apply_mutant,
    fault_spans,
    names_release_file,
    rates,
    read_slice,
    run_release_mutant,
)
from mutants.release_source import CATALOGUE, release_mutant_named
from mutants.source_edits import ReleaseMutant, SourceEdit, SourceMove, TransformMissed, sub


def test_a_file_is_named_only_as_a_whole_name_with_its_line() -> None:
    assert names_release_file("memory_pool.py", ("IndexError: (memory_pool.py:218) at forward 0",))
    assert not names_release_file("memory_pool.py", ("AssertionError:  (swa_memory_pool.py:270)",))
    assert not names_release_file("memory_pool.py", ("memory_pool.py without a line",))


def test_a_run_without_a_verdict_keeps_why_and_not_where_its_files_are(tmp_path: Path) -> None:
    """A stored campaign carries this detail: the scratch run's paths are of this machine."""
    output = (
        "era table: 0 checks\n"
        f"{RESULTS}{tmp_path}/check-1.parquet, summary: {tmp_path}/summary-1.md\n"
        "kvh: the selection planned no check, so nothing was judged"
    )
    judged = read_slice(2, output, tmp_path, 0.1)
    assert judged.verdict == "ERROR"
    assert (
        judged.detail
        == "era table: 0 checks | kvh: the selection planned no check, so nothing was judged"
    )
    assert str(tmp_path) not in judged.detail


def test_sub_raises_when_nothing_matches() -> None:
    assert sub(r"\bswa_loc\b", "swa_slot")("x.swa_loc; swa_locs") == "x.swa_slot; swa_locs"
    with pytest.raises(TransformMissed):
        sub(r"\bswa_loc\b", "swa_slot")("nothing here")


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "sglang"
    (package / "srt").mkdir(parents=True)
    (package / "srt" / "a.py").write_text("loc, swa_loc = unwrap(x)\nf(swa_loc=swa_loc)\n")
    (package / "srt" / "b.py").write_text("print('untouched')\n")
    return package


def test_glob_edit_changes_every_file_it_matches_and_no_other(tmp_path: Path) -> None:
    package = _package(tmp_path)
    record = ReleaseMutant(
        "r", "refactor", "rename", (SourceEdit("**/*.py", sub(r"\bswa_loc\b", "swa_slot")),)
    )
    assert apply_mutant(record, package) == 1
    assert (package / "srt" / "a.py").read_text() == (
        "loc, swa_slot = unwrap(x)\nf(swa_slot=swa_slot)\n"
    )
    assert (package / "srt" / "b.py").read_text() == "print('untouched')\n"


def test_an_edit_that_does_not_apply_says_which(tmp_path: Path) -> None:
    package = _package(tmp_path)
    missing_file = ReleaseMutant("m", "refactor", "d", (SourceEdit("srt/c.py", sub("x", "y")),))
    with pytest.raises(TransformMissed, match="no srt/c.py"):
        apply_mutant(missing_file, package)
    no_match = ReleaseMutant("n", "refactor", "d", (SourceEdit("srt/b.py", sub("zzz", "y")),))
    with pytest.raises(TransformMissed, match="srt/b.py"):
        apply_mutant(no_match, package)


def test_a_move_leaves_a_re_export_and_the_moved_definitions_import_alike(tmp_path: Path) -> None:
    package = tmp_path / "sglang"
    (package / "srt").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "srt" / "__init__.py").write_text("")
    (package / "srt" / "pool.py").write_text(
        "import os\n\n\n@dataclass_like\nclass Loc:\n    x = 1\n\n\n"
        "def unwrap(v):\n    return (v,)\n\n\nclass Pool:\n    pass\n"
    )
    move = SourceMove("srt/pool.py", "srt/loc.py", ("Loc", "unwrap", "absent"), "HEADER\n")
    record = ReleaseMutant("m", "refactor", "move", (move,))
    assert apply_mutant(record, package) == 2
    kept = (package / "srt" / "pool.py").read_text()
    assert kept == (
        "import os\n\n\nfrom sglang.srt.loc import Loc, unwrap  # noqa: F401 (moved)\n"
        "\n\nclass Pool:\n    pass\n"
    )
    moved = (package / "srt" / "loc.py").read_text()
    assert moved.startswith("HEADER\n@dataclass_like\nclass Loc:") and "def unwrap(v)" in moved
    with pytest.raises(TransformMissed, match="exists already"):
        apply_mutant(record, package)  # the target module is there now


@pytest.mark.sglang
def test_every_edit_of_the_catalogue_applies_to_the_installed_release_and_compiles(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    release = release_folder("sglang") / "sglang"
    for mutant in CATALOGUE:
        if any(edit.is_glob for edit in mutant.edits):
            continue  # a rename at every use: run whole by the slow test and kvh mutants
        package = tmp_path / mutant.name
        for edit in mutant.edits:
            (package / edit.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(release / edit.path, package / edit.path)
        assert apply_mutant(mutant, package) >= 1, mutant.name
        for path in package.rglob("*.py"):
            compile(path.read_text(), str(path), "exec")  # a SyntaxError names the record's file
        if mutant.kind == "fault":  # each fault's edit is inside a function a finding can name
            spans = fault_spans(mutant, release, package)
            assert spans and all(span.name for span in spans), (mutant.name, spans)


def test_records_are_validated_and_named_uniquely() -> None:
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    assert {m.kind for m in CATALOGUE} == {"refactor", "fault"}
    with pytest.raises(ValueError, match="names the file"):
        ReleaseMutant("f", "fault", "d", (SourceEdit("a.py", sub("a", "b")),))
    with pytest.raises(ValueError, match="no release-source mutant"):
        release_mutant_named("nope")


def test_copy_symlinks_a_release_folders_siblings(tmp_path: Path) -> None:
    source = tmp_path / "release"
    _package(source)
    (source / "dep").mkdir()
    copy = copy_release(source, tmp_path / "copy", with_siblings=True)
    assert (copy / "dep").is_symlink() and not (copy / "sglang").is_symlink()
    (copy / "sglang" / "srt" / "b.py").write_text("changed")
    assert (source / "sglang" / "srt" / "b.py").read_text() == "print('untouched')\n"


def test_a_sparse_copy_owns_only_the_edited_files_and_their_folders(tmp_path: Path) -> None:
    source = tmp_path / "release"
    package = _package(source)
    (package / "__init__.py").write_text("")
    (package / "other").mkdir()
    (package / "srt" / "__pycache__").mkdir()
    for compiled in ("a.cpython-311.pyc", "b.cpython-311.pyc"):
        (package / "srt" / "__pycache__" / compiled).write_bytes(b"")
    (source / "dep").mkdir()
    edited = [Path("sglang/srt/a.py")]
    copy = sparse_copy(source, tmp_path / "copy", edited, with_siblings=True)
    own = copy / "sglang"
    assert not own.is_symlink() and not (own / "srt").is_symlink()
    assert (own / "other").is_symlink() and (own / "srt" / "b.py").is_symlink()
    assert (copy / "dep").is_symlink()
    # The edited file and the package's __init__ are copies: an edit stays in the copy.
    assert not (own / "srt" / "a.py").is_symlink() and not (own / "__init__.py").is_symlink()
    (own / "srt" / "a.py").write_text("changed")
    assert (package / "srt" / "a.py").read_text().startswith("loc, swa_loc")
    # The release's bytecode of the unedited module is linked; the edited module's is not.
    assert sorted(p.name for p in (own / "srt" / "__pycache__").iterdir()) == ["b.cpython-311.pyc"]
    shutil.rmtree(copy)  # removes the links, never what they point at
    assert (package / "srt" / "b.py").is_file() and (source / "dep").is_dir()


# The cheapest slice that still runs release code: one pool, one dtype, the plain model and fa3.
_SLICE = {"pools": ("mha",), "dtypes": ("bf16",), "backends": ("plain", "fa3")}


@pytest.mark.slow
@pytest.mark.sglang
def test_a_refactor_passes_and_a_fault_is_caught_on_the_installed_release(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    release_folder("sglang")  # raises if the package cannot be located
    refactor = replace(release_mutant_named("rename_unwrap_helper"), **_SLICE)
    fault = replace(release_mutant_named("door_no_unwrap"), **_SLICE)
    baselines: dict = {}
    results = [run_release_mutant(m, "sglang", tmp_path, baselines) for m in (refactor, fault)]
    passed, caught = results
    assert passed.verdict == "PASS", passed.to_dict()
    assert passed.real_code == passed.real_code_release > 0, passed.to_dict()
    assert caught.verdict == "FINDING" and caught.findings > 0, caught.to_dict()
    assert caught.names_file, caught.first_finding
    assert caught.names_edit, caught.first_finding
    assert rates(results)["refactors_passed"] == "1/1"
    assert rates(results)["faults_caught"] == "1/1"


def test_a_plan_differs_by_any_check_s_outcome_or_skip_and_not_by_the_copy_s_path() -> None:
    import pandas as pd

    from harness.run.release_source import check_plan, plan_difference

    row = dict(backend="plain", pool="hisparse_dsa", dtype="bf16", sut="sglang", engine="-",
               era="current", scenario="prefill", mode="extend", outcome="pass", skip_kind="",
               detail="", divergence="")  # fmt: skip
    release = check_plan(pd.DataFrame([row]))
    copy = check_plan(pd.DataFrame([{**row, "sut": "sglang@copies/release"}]))
    assert plan_difference(release, copy) == []
    skipped = {**row, "outcome": "skipped", "skip_kind": "skipped",
               "detail": "hisparse-dsa-door-takes-bare-loc: indexes its mapping"}  # fmt: skip
    (line,) = plan_difference(release, check_plan(pd.DataFrame([skipped])))
    assert "hisparse-dsa-door-takes-bare-loc" in line and "'pass'" in line


@pytest.mark.slow
@pytest.mark.sglang
def test_the_measured_refactors_pass_with_the_release_s_plan_row_for_row(tmp_path: Path) -> None:
    """The two refactors that once failed (126 false findings; 32 checks of hisparse_dsa turned
    into a declared skip) keep every check's outcome and skip of the unmodified release. One
    slice, so the release is judged once."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    cells = {"pools": ("unified_mha", "hisparse_dsa"), "dtypes": ("bf16",), "backends": ("plain",)}
    baselines: dict = {}
    for name in ("physical_mark_as_id_space", "unwrap_helper_as_methods"):
        record = replace(release_mutant_named(name), **cells)
        result = run_release_mutant(record, "sglang", tmp_path, baselines)
        assert result.verdict == "PASS" and result.ok, result.to_dict()
        assert result.plan_differences == 0 and result.checks > 0, result.to_dict()
