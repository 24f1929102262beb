"""A CP group's ranks are forked from one process that loaded the release once
(harness/cli/rank_zygote.py, harness/sut/worker/rank_forker.py): a forked rank says what a cold
rank says, a group started again forks new ranks from the same process, a rank's exit code comes
back as Popen's, and nothing outlives the group. A release that does not load is refused with the
loader's own message, as a cold rank's hello refuses it; one whose load leaves a thread running
gets cold ranks."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from harness.sut.worker.client import WorkerFailure
from harness.sut.worker.cp_group import CpGroup
from harness.sut.worker.rank_forker import RankForker
from tests.helpers.planted_release import copy_release, installed_sglang, replace_file

pytestmark = [pytest.mark.sglang, pytest.mark.slow, pytest.mark.distributed]

PLANTED = "planted: this release does not import"


def _alive(pids: list[int]) -> list[int]:
    return [
        pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    ]


def test_a_forked_group_answers_as_a_cold_one_and_starts_again_by_forking():
    prefix = str(installed_sglang().parent)
    forked, cold = CpGroup(prefix, kinds=["mha"]), CpGroup(prefix, kinds=["mha"])
    cold.forker = None  # each rank a cold worker, as before the forker
    started: list[int] = []
    try:
        forked._start()
        cold._start()
        assert [rank.described for rank in forked.ranks] == [rank.described for rank in cold.ranks]
        assert [rank.cp_model_why for rank in forked.ranks] == [None, None]  # both joined
        assert [rank.cp_model_why for rank in cold.ranks] == [None, None]
        forker = forked.forker.process.pid
        first = [rank.process.pid for rank in forked.ranks]
        assert all(psutil.Process(pid).ppid() == forker for pid in first)
        forked.ranks[1].process.kill()
        assert forked.ranks[1].process.wait(timeout=30) == -signal.SIGKILL
        forked.stop_ranks()
        forked._start()
        again = [rank.process.pid for rank in forked.ranks]
        assert forked.forker.process.pid == forker and set(again).isdisjoint(first)
        assert [rank.described for rank in forked.ranks] == [rank.described for rank in cold.ranks]
        started = [forker, *first, *again]
    finally:
        forked.stop()
        cold.stop()
    assert started and _alive(started) == []


def test_a_release_that_does_not_load_is_refused_with_its_own_error(tmp_path):
    copy = copy_release(tmp_path)
    replace_file(copy, "__init__.py", f"raise ImportError({PLANTED!r})\n")
    forker = RankForker(str(tmp_path), ["mha"])
    with pytest.raises(WorkerFailure) as refused:
        forker.start()
    assert refused.value.kind == "refused" and PLANTED in refused.value.load_error
    assert forker.process is None and forker.control is None


def test_a_release_that_leaves_a_thread_running_gets_cold_ranks(tmp_path, capsys):
    """A fork would hand each rank the locks that thread holds, with no thread to free them."""
    copy = copy_release(tmp_path)
    started = (copy / "__init__.py").read_text() + (
        "\nimport threading as _threading, time as _time\n"
        "_threading.Thread(target=_time.sleep, args=(3600,), daemon=True).start()\n"
    )
    replace_file(copy, "__init__.py", started)
    group = CpGroup(str(tmp_path), kinds=["mha"])
    try:
        group._start()
        assert group.forker is None
        assert all(psutil.Process(rank.process.pid).ppid() == os.getpid() for rank in group.ranks)
        assert [rank.cp_model_why for rank in group.ranks] == [None, None]
    finally:
        group.stop()
    assert "CP ranks start cold" in capsys.readouterr().err
