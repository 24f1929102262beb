"""Exit codes mean one thing each: 1 is findings; a bad value or an output that cannot be written
is 2 with one line and nothing written; an internal error is 3 with its traceback."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.cli.junit import MUTANT_FAILED, write_junit
from harness.exit_codes import EXIT_INTERNAL, EXIT_USAGE


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out", "/proc/kvh-cannot-write"],
        ["matrix", "--out", "/proc/kvh-cannot-write.json"],
        ["run", "--timeout", "-1"],
        ["run", "--timeout", "zero"],
    ],
)
def test_bad_values_and_unwritable_outputs_are_one_line_and_exit_2(argv, capsys) -> None:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("kvh: error:") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_read_only_output_folder_is_exit_2_and_nothing_is_written(tmp_path: Path, capsys) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inner").mkdir()
    locked.chmod(0o500)
    try:
        import os

        if os.access(locked, os.W_OK) and os.geteuid() == 0:
            # root ignores permission bits: probe /proc instead, which refuses even root.
            target = Path("/proc") / "kvh-out"
        else:
            target = locked / "out"
        assert (
            main(
                [
                    "run",
                    "--pool",
                    "mha",
                    "--dtype",
                    "bf16",
                    "--backend",
                    "plain",
                    "--out",
                    str(target),
                ]
            )
            == EXIT_USAGE
        )
        assert not target.exists()
    finally:
        locked.chmod(0o700)
    assert "cannot be written" in capsys.readouterr().err


def test_an_internal_error_is_exit_3_with_its_traceback(monkeypatch, capsys) -> None:
    import harness.cli.matrix as matrix

    def broken(arguments):
        raise ZeroDivisionError("a bug of the harness")

    monkeypatch.setattr(matrix, "main", broken)
    assert main(["matrix"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "not a finding" in err


def test_junit_has_one_case_per_cell_with_the_finding_and_its_repro(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {
                "pool": "mha",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "pass",
                "detail": "",
                "repro": None,
            },
            {
                "pool": "mha",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "finding",
                "detail": "[bytes] written bytes differ",
                "repro": "repros/x.json",
            },
            {
                "pool": "mla",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "skipped",
                "detail": "no-cross-attention: ...",
                "repro": None,
            },
            {
                "pool": "mla",
                "dtype": "fp16",
                "backend": "plain",
                "outcome": "pass",
                "detail": "",
                "repro": None,
            },
        ]
    )
    path = write_junit(tmp_path / "junit.xml", frame, "run", ("pool", "dtype", "backend"))
    root = ElementTree.parse(path).getroot()
    assert root.attrib == {"name": "kvh run", "tests": "3", "failures": "1", "skipped": "1"}
    cases = {case.attrib["name"]: case for case in root.iter("testcase")}
    assert set(cases) == {"mha/bf16/plain", "mla/bf16/plain", "mla/fp16/plain"}
    failure = cases["mha/bf16/plain"].find("failure")
    assert failure is not None and "kvh repro repros/x.json" in failure.text
    assert cases["mla/bf16/plain"].find("skipped").attrib["message"].startswith("no-cross")
    assert list(cases["mla/fp16/plain"]) == []


def test_junit_for_mutants_fails_on_a_survivor_not_on_a_kill(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {"mutant": "a", "outcome": "killed", "detail": ""},
            {"mutant": "b", "outcome": "survived", "detail": "no finding"},
        ]
    )
    root = ElementTree.parse(
        write_junit(tmp_path / "m.xml", frame, "mutants", ("mutant",), MUTANT_FAILED)
    ).getroot()
    assert root.attrib["failures"] == "1"


@pytest.mark.parametrize(
    "stop, code, said",
    [
        (KeyboardInterrupt(), 130, "kvh: interrupted"),
        ("SIGINT", 130, "kvh: interrupted"),
        ("SIGTERM", 143, "kvh: terminated (SIGTERM)"),
    ],
)
def test_an_interrupt_outside_a_run_is_130_and_sigterm_143(stop, code, said, monkeypatch, capsys):
    import signal

    import harness.cli.matrix as matrix
    from harness.exit_codes import Interrupted

    def stopped(arguments):
        raise stop if isinstance(stop, KeyboardInterrupt) else Interrupted(getattr(signal, stop))

    monkeypatch.setattr(matrix, "main", stopped)
    assert main(["matrix"]) == code
    assert capsys.readouterr().err.strip() == said


def test_sigterm_is_an_interrupt_only_inside_and_the_old_handler_comes_back() -> None:
    import signal

    from harness.exit_codes import Interrupted, StopSignals

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as stopped:
        with StopSignals():
            signal.raise_signal(signal.SIGTERM)  # the handler runs before the next line
            pytest.fail("SIGTERM did not interrupt")
    assert isinstance(stopped.value, KeyboardInterrupt) and stopped.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_whose_raise_python_lost_in_a_gc_callback_is_raised_again(
    signame: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis keeps a callback in gc.callbacks; CPython discards an exception raised in one
    ("Exception ignored in ..."), so a signal handled there would not stop a run by itself."""
    import gc
    import signal
    import sys

    from harness.exit_codes import Interrupted, StopSignals

    signum = getattr(signal, signame)
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)  # what Python would print
    # Python's own Ctrl-C handler, which StopSignals takes over (a test runner may have its own).
    monkeypatch.setattr(signal, "getsignal", lambda signum: signal.default_int_handler)

    def signal_inside(phase: str, info: dict) -> None:
        if phase == "start":
            signal.raise_signal(signum)  # the handler runs here, inside the callback

    with StopSignals() as stop:
        gc.callbacks.append(signal_inside)
        try:
            gc.collect()  # no exception comes out of it: the raise is lost
        finally:
            gc.callbacks.remove(signal_inside)
        assert stop.signum == signum
        with pytest.raises(Interrupted) as again:
            stop.raise_if_stopped()
    assert again.value.signum == signum
    assert printed == []  # the lost one is raised again, so it is not printed either
    assert sys.unraisablehook == printed.append  # outside, the hook is the one from before


def test_an_ignored_sigint_stays_ignored_inside_stop_signals() -> None:
    import signal

    from harness.exit_codes import StopSignals

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopSignals() as stop:
            signal.raise_signal(signal.SIGINT)
            assert stop.signum is None
            stop.raise_if_stopped()  # nothing came
    finally:
        signal.signal(signal.SIGINT, before)


def test_the_verdict_of_an_interrupted_run_says_what_did_not_finish() -> None:
    from reports.summary import NAMED_UNFINISHED, Interruption, verdict

    frame = pd.DataFrame({"outcome": ["pass", "finding", "skipped"]})
    names = tuple(f"cell{i}" for i in range(NAMED_UNFINISHED + 2))
    line = verdict(frame, ["pass"], (), Interruption("SIGTERM", 1, 9, "cells", names))
    assert line.startswith("INTERRUPTED (SIGTERM) after 1 of 9 cells: 3 checks: 1 passed, 1 with")
    assert line.endswith(f"; not finished: {', '.join(names[:NAMED_UNFINISHED])} and 2 more")
    planned = verdict(frame, (), (), Interruption("SIGINT", 2, 3, "groups", ("mla bf16",), 40))
    assert planned.startswith("INTERRUPTED (SIGINT) after 2 of 3 groups (40 checks planned): 3")
    assert planned.endswith("; not finished: mla bf16")
    # Without an interruption the verdict is as it was.
    assert verdict(frame).startswith("FAIL: 3 checks")


def test_a_run_that_plans_no_check_is_nothing_checked_and_exit_2(tmp_path: Path, capsys) -> None:
    """triton_dcp's call site exists in the current era only: asked for the legacy era alone,
    the run holds no check, and says so instead of a PASS over nothing."""
    argv = ["run", "--pool", "mha", "--dtype", "bf16", "--backend", "triton_dcp"]
    assert main([*argv, "--era", "legacy", "--out", str(tmp_path / "none")]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert "NOTHING CHECKED: 0 checks" in captured.out
    assert "planned no check" in captured.err and "Traceback" not in captured.err
    shard = ["--era", "legacy", "--shard", "1/2", "--out", str(tmp_path / "share")]
    assert main([*argv, *shard]) == 0  # one share of a run: the run says whether any held one
    assert main([*argv, "--out", str(tmp_path / "some")]) == 0
    assert "PASS: 12 checks" in capsys.readouterr().out


def test_sigterm_inside_hypothesis_comes_out_as_the_same_interrupt() -> None:
    import signal

    from hypothesis import settings
    from hypothesis import strategies as st

    from harness.exit_codes import Interrupted, StopSignals
    from scenarios.explore import explore

    checked = []

    def check(example):
        checked.append(example)
        if len(checked) == 3:
            signal.raise_signal(signal.SIGTERM)
            pytest.fail("SIGTERM did not interrupt the check")
        return []

    quiet = settings(max_examples=50, database=None, deadline=None)
    with pytest.raises(Interrupted) as stopped, StopSignals():
        explore(st.integers(), check, lambda results: False, quiet, 0, "interrupt")
    assert stopped.value.signum == signal.SIGTERM and len(checked) == 3


def test_held_signals_are_remembered_not_raised_and_the_handlers_come_back() -> None:
    import os
    import signal

    from harness.exit_codes import HeldSignals

    before = signal.getsignal(signal.SIGTERM)
    held = HeldSignals().hold()
    os.kill(os.getpid(), signal.SIGTERM)  # would end the process, or raise, if not held
    os.kill(os.getpid(), signal.SIGINT)
    assert held.release() == signal.SIGTERM  # the first one
    assert signal.getsignal(signal.SIGTERM) is before
