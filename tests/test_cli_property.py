"""No input crashes kvh: Hypothesis draws command lines for every verb (tests/cli_argv.py), valid
and invalid values mixed, and each must end in exit 0, 1 or 2, never 3 (an internal error), with
no traceback on stderr. The entry point runs in this process (harness.cli.main), and the two
loops that execute checks (harness.run.deterministic.run, harness.run.exploring.explore_run)
are stubbed to check nothing: a drawn valid `kvh run` still parses, validates, loads its SUTs,
writes its records and summary and exits as a real run does, in milliseconds. Derandomized,
so CI draws the same command lines every time."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings

import harness.run.deterministic
import harness.run.exploring
from harness.cli import main as kvh
from reports.store import append, run_meta
from tests.cli_argv import argv
from tests.conftest import scenario_file
from tests.helpers.results import check_rows, planted_results
from tests.test_bad_inputs import _foreign_file

EXAMPLES = 600


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The files a drawn command line may name: results folders (empty, corrupt, forged, valid),
    a scenario file and a bad one, and a plain file where a folder or JSON is wanted."""
    root = tmp_path_factory.mktemp("cli-property")
    (root / "empty").mkdir()
    (root / "corrupt").mkdir()
    (root / "corrupt" / "torn.parquet").write_bytes(b"not parquet")
    (root / "forged").mkdir()
    _foreign_file(root / "forged")
    planted_results(root / "valid", runs=3, plant=False)
    append(root / "valid", check_rows("plain"), "check", run_meta("cpu", 0))
    (root / "file").write_text("not a folder\n")
    scenario_file(root)
    (root / "bad.json").write_text('{"format": "kvh-repro", "version": 1, "scen')
    return root


def _checks_nothing(*args, **kwargs) -> None:
    return None


def _kvh(command: list[str]) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = kvh(command)
        except SystemExit as exit:  # --help, as the console script would see it
            code = exit.code if isinstance(exit.code, int) else 2
    return code, stderr.getvalue()


def test_no_drawn_command_line_is_an_internal_error(folder, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(harness.run.deterministic, "run", _checks_nothing)
        patch.setattr(harness.run.exploring, "explore_run", _checks_nothing)
        patch.delenv("KVH_PROFILE", raising=False)
        patch.setenv("KVH_CACHE", str(tmp_path_factory.mktemp("cache")))
        seen: list[int] = []

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(command=argv(folder))
        def check(command: list[str]) -> None:
            code, stderr = _kvh(command)
            seen.append(code)
            assert code in (0, 1, 2), f"kvh {json.dumps(command)} exited {code}:\n{stderr}"
            assert "Traceback" not in stderr, f"kvh {json.dumps(command)}:\n{stderr}"

        check()
    # The draws reach every exit a user can get: a pass, a usage error, and enough of them.
    assert len(seen) >= 500 and {0, 2} <= set(seen), sorted(set(seen))
