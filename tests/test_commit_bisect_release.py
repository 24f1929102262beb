"""From a FAIL to the commit, on the real 0.5.23: a local git checkout built from the installed
release's tree, with an unrelated commit, one that breaks the import, one that fixes it, one that
plants a fault of the release-source catalogue (door_no_unwrap) and one more unrelated commit.
`kvh bisect --git` and plain `git bisect run` with the command line it prints both name the
fault commit; `kvh run` of that commit and `kvh repro` of its repro file give the same finding."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.release_source import apply_mutant
from harness.sut.load.environments import installed
from mutants.release_source import release_mutant_named
from tests.conftest import run_kvh, skip_unless_installed
from tests.test_commit_bisect import checkout_state, commit, git_out

pytestmark = pytest.mark.slow
CHECK = ("--scenario", "prefill", "--pool", "mha", "--dtype", "bf16", "--backend", "plain")
SUBJECTS = (
    "base: the release's tree",
    "docs: unrelated notes",
    "breaks the import",
    "fixes the import",
    "door forgets to unwrap",
    "docs: more notes",
)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The checkout, its commits by subject, and $KVH_CACHE pointing at a cache of its own (so
    every worktree the tests make is theirs; the release itself is read from the usual cache)."""
    skip_unless_installed("sglang==0.5.23")
    release = installed("sglang==0.5.23") / "sglang"
    root = tmp_path_factory.mktemp("history")
    folder, pool_file = root / "sglang", Path("python/sglang/srt/mem_cache/memory_pool.py")
    folder.mkdir()
    git_out(folder, "init", "-q", "-b", "main")
    shutil.copytree(release, folder / "python/sglang", ignore=shutil.ignore_patterns("__pycache__"))
    original = (folder / pool_file).read_text()
    shas = {SUBJECTS[0]: commit(folder, SUBJECTS[0], {})}
    shas[SUBJECTS[1]] = commit(folder, SUBJECTS[1], {"NOTES.md": "notes\n"})
    broken = original + "\nraise ImportError('broken on purpose')\n"
    shas[SUBJECTS[2]] = commit(folder, SUBJECTS[2], {str(pool_file): broken})
    shas[SUBJECTS[3]] = commit(folder, SUBJECTS[3], {str(pool_file): original})
    assert apply_mutant(release_mutant_named("door_no_unwrap"), folder / "python/sglang") == 1
    shas[SUBJECTS[4]] = commit(folder, SUBJECTS[4], {})
    shas[SUBJECTS[5]] = commit(folder, SUBJECTS[5], {"NOTES.md": "more notes\n"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KVH_CACHE", str(root / "cache"))
        yield folder, shas


def own_worktrees(folder: Path) -> list[str]:
    """The checkout's worktrees other than those kvh keeps in its cache."""
    cache = os.environ["KVH_CACHE"]
    listed = git_out(folder, "worktree", "list", "--porcelain").splitlines()
    return [line for line in listed if line.startswith("worktree ") and cache not in line]


def test_kvh_bisect_and_git_bisect_run_name_the_fault_commit(history):
    folder, shas = history
    before, worktrees = checkout_state(folder)[:3], own_worktrees(folder)
    result = run_kvh("bisect", "--git", str(folder), "HEAD~5", "HEAD", *CHECK)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    fault, broken = shas["door forgets to unwrap"], shas["breaks the import"]
    assert (
        f"first commit that behaves otherwise than {shas[SUBJECTS[0]][:12]}: {fault[:12]} "
        "'door forgets to unwrap' (pass -> finding: exception)" in result.stdout
    )
    assert f"skipped (could not be judged): {broken[:12]} 'breaks the import'" in result.stdout
    assert checkout_state(folder)[:3] == before and own_worktrees(folder) == worktrees
    assert not (folder / ".git" / "BISECT_LOG").exists()

    lines = result.stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("by hand"))
    by_hand = [shlex.split(line) for line in lines[start + 1 :]]
    steps = [["git", "-C", str(folder), "bisect", step] for step in ("start", "run", "reset")]
    assert [words[:5] for words in by_hand] == steps
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # where kvh is
    said = [
        subprocess.run(words, capture_output=True, text=True, env={**os.environ, "PATH": path})
        for words in by_hand
    ]
    assert [done.returncode for done in said] == [0, 0, 0], said[1].stdout + said[1].stderr
    assert f"{fault} is the first bad commit" in said[1].stdout
    assert checkout_state(folder)[:3] == before


def test_a_commit_run_and_its_repro_give_the_same_finding(history, tmp_path):
    folder, shas = history
    fault = shas["door forgets to unwrap"]
    run = run_kvh(
        *("run", "--sut", f"sglang@git:{folder}#main~1", "--pool", "mha", "--dtype", "bf16"),
        *("--backend", "plain", "--examples", "1", "--out", str(tmp_path)),
    )
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    repro = next((tmp_path / "repros").glob("*-prefill-*.json"))
    assert (
        json.loads(repro.read_text())["candidate"]["sut"]
        == f"sglang@git:{folder.resolve()}#{fault}"
    )
    replayed = run_kvh("repro", str(repro))
    assert replayed.returncode == 1 and "reproduced: identical finding" in replayed.stdout

    failing = run_kvh("bisect", "--git", str(folder), "main~1", "main", *CHECK)
    assert failing.returncode == 2
    assert "GOOD main~1 already fails the check (finding: exception)" in failing.stderr
