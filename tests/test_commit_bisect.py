"""Commits of a local git checkout: `sglang@git:PATH#REV` checked out into the cache keyed by its
full SHA, `git bisect` driven in a scratch worktree that is removed however it ends, and every bad
input an exit 2 that names it. Small checkouts with a stub package and a judge read from each
commit's subject; tests/test_commit_bisect_release.py judges commits of the real 0.5.23."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.run.bisect import Probe
from harness.run.commit_bisect import bisect_commits
from harness.sut.load import git_commits
from harness.sut.load.environments import installed, target_dir
from tests.conftest import run_kvh

IDENTITY = ("-c", "user.name=kvh", "-c", "user.email=kvh@example.invalid")


def git_out(folder: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *IDENTITY, *arguments],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit(folder: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git_out(folder, "add", "-A")
    git_out(folder, "commit", "-q", "-m", message)
    return git_out(folder, "rev-parse", "HEAD")


def checkout_state(folder: Path) -> tuple[str, ...]:
    """What a bisection must leave as it found it: branch, HEAD, status, worktrees, bisect log."""
    return (
        git_out(folder, "symbolic-ref", "HEAD"),
        git_out(folder, "rev-parse", "HEAD"),
        git_out(folder, "status", "--porcelain", "--untracked-files=all"),
        git_out(folder, "worktree", "list", "--porcelain"),
        str((folder / ".git" / "BISECT_LOG").exists()),
    )


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> tuple[Path, list[str]]:
    """A checkout of 7 commits whose subjects say how each behaves (`pass`, `finding`, `skip`);
    the first has no python/sglang, the user has an uncommitted edit."""
    monkeypatch.setenv("KVH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "sglang-checkout"
    folder.mkdir()
    git_out(folder, "init", "-q", "-b", "main")
    shas = [commit(folder, "no package yet", {"README.md": "sglang\n"})]
    for index, said in enumerate(["pass", "pass", "skip", "pass", "finding", "finding"]):
        package = {"python/sglang/__init__.py": f"STEP = {index}\n"}
        shas.append(commit(folder, f"{said} {index}", package))
    (folder / "README.md").write_text("the user's own edit\n")
    return folder, shas


def judge_by_subject(checkout: Path, tried: list[str]):
    def judge(sha: str) -> Probe:
        tried.append(sha)
        said = git_commits.subject(checkout, sha).split()[0]
        return Probe(sha, skipped="does not import") if said == "skip" else Probe(sha, said)

    return judge


def test_git_bisect_names_the_first_commit_that_behaves_otherwise_and_leaves_the_checkout(
    checkout,
):
    folder, shas = checkout
    before, tried = checkout_state(folder), []
    result = bisect_commits(folder, shas[1], shas[-1], "pass", judge_by_subject(folder, tried))
    assert result.first_changed == shas[5]
    assert shas[5] in tried and set(tried) <= set(shas[2:-1])
    assert checkout_state(folder) == before


def test_a_bad_child_of_good_is_named_without_judging_anything(checkout):
    folder, shas = checkout
    tried: list[str] = []
    result = bisect_commits(folder, shas[4], shas[5], "pass", judge_by_subject(folder, tried))
    assert result.first_changed == shas[5] and tried == []


def test_only_skipped_commits_left_name_every_commit_the_change_may_be_in(tmp_path, monkeypatch):
    monkeypatch.setenv("KVH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "checkout"
    folder.mkdir()
    git_out(folder, "init", "-q", "-b", "main")
    shas = [
        commit(folder, said, {"python/sglang/__init__.py": f"# {index}\n"})
        for index, said in enumerate(["pass", "skip", "skip", "finding"])
    ]
    result = bisect_commits(folder, shas[0], shas[-1], "pass", judge_by_subject(folder, []))
    assert result.first_changed is None
    assert set(result.could_be) == set(shas[1:])


def test_an_interrupt_mid_bisection_resets_git_bisect_and_removes_its_worktree(checkout):
    folder, shas = checkout
    before = checkout_state(folder)

    def interrupted(sha: str) -> Probe:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bisect_commits(folder, shas[1], shas[-1], "pass", interrupted)
    assert checkout_state(folder) == before
    assert not list(git_commits.commit_cache().glob("bisect-*"))


def test_a_commit_is_checked_out_once_into_the_cache_by_its_full_sha(checkout):
    folder, shas = checkout
    before = checkout_state(folder)
    spec = git_commits.materialise(f"sglang@git:{folder}#main~1")
    assert spec == f"sglang@git:{folder.resolve()}#{shas[-2]}"
    sut_folder = installed(spec)
    assert sut_folder == target_dir(spec) == git_commits.commit_cache() / shas[-2] / "python"
    assert (sut_folder / "sglang" / "__init__.py").read_text() == "STEP = 4\n"
    # The package alone: README.md, the rest of the commit's tree, is not checked out.
    assert sorted(p.name for p in sut_folder.parent.iterdir()) == [
        ".git",
        "kvh-commit.json",
        "python",
    ]
    assert [p.name for p in sut_folder.iterdir()] == ["sglang"]
    assert git_commits.materialise(spec) == spec  # reused: no second worktree
    assert git_commits.cached_commits() == [(spec, sut_folder.parent)]  # as kvh sut list says
    listed = git_out(folder, "worktree", "list", "--porcelain").splitlines()
    assert sum(line.startswith("worktree ") and shas[-2] in line for line in listed) == 1
    # The checkout's own state is untouched but for the worktree the cache holds.
    assert checkout_state(folder)[:3] == before[:3]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--git", "{missing}", "HEAD~1", "HEAD"], "is not a git checkout"),
        (["--git", "{checkout}", "no-such-rev", "HEAD"], "revision 'no-such-rev' does not resolve"),
        (
            ["--git", "{checkout}", "HEAD~6", "HEAD"],
            "has no python/sglang/: not an SGLang checkout",
        ),
        (["--git", "{checkout}", "HEAD", "HEAD~2"], "is not an ancestor of BAD HEAD~2"),
        (["--git", "{checkout}", "HEAD~2", "HEAD", "--releases", "x"], "--git bisects commits"),
        (["--check", "HEAD", "--expect", "pass"], "give --git PATH"),
    ],
)
def test_bad_input_to_a_commit_bisection_is_exit_2_naming_it(checkout, arguments, message):
    folder, _ = checkout
    named = [a.format(missing=folder.parent / "nowhere", checkout=folder) for a in arguments]
    result = run_kvh("bisect", *named, "--scenario", "prefill", "--pool", "mha")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_run_of_a_commit_that_names_no_checkout_or_package_is_exit_2(checkout):
    folder, _ = checkout
    for spec, message in [
        (f"sglang@git:{folder.parent / 'nowhere'}", "is not a git checkout"),
        (f"sglang@git:{folder}#HEAD~6", "has no python/sglang/"),
        (f"sglang@git:{folder}#nope", "revision 'nope' does not resolve"),
    ]:
        result = run_kvh("run", "--sut", spec, "--pool", "mha", "--examples", "1")
        assert result.returncode == 2 and message in result.stderr, result.stderr


def test_check_follows_git_bisect_run_s_exit_codes(checkout):
    """125 for a commit without the package (git tries its neighbours), 128 for bad input, so
    that `git bisect run` stops instead of calling the commit bad."""
    folder, _ = checkout
    check = ("bisect", "--git", str(folder), "--expect", "pass", "--scenario", "prefill")
    no_package = run_kvh(*check, "--check", "HEAD~6", "--pool", "mha")
    assert no_package.returncode == 125, no_package.stderr
    assert "has no python/sglang/" in no_package.stderr
    bad_scenario = run_kvh(*check, "--check", "HEAD", "--pool", "no-such-pool")
    assert bad_scenario.returncode == 128 and "stopping the bisection" in bad_scenario.stderr
