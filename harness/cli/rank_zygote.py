"""A CP group's rank forker: loads one release once, then forks each rank of the group on request
(harness/sut/worker/rank_forker.py is its other end).

A rank that raises where its peers did not leaves them waiting in a collective, so the group is
stopped and started again (harness/sut/worker/cp_group.py). A cold rank spends ~8 s importing torch,
the release's third-party modules and the release before its first check, which made a mutation
campaign's CP mutants cost up to 800 s each (a group started again at most checks). Forked from
this loaded process, a rank costs its fork and its join.

Run as `python -m harness.cli.rank_zygote --sut SPEC --prefix DIR --control FD [--pools KINDS]`.
FD is one end of a SOCK_SEQPACKET socket pair. Its first message says whether the release loaded
(a worker's load-failure answer, else {"ok": true, "cannot_fork": WHY}, WHY empty where only its
main thread runs); then each request is answered in one message:
  {"op": "fork", "cp": [RANK, WORLD, ADDRESS], "coverage": DIR|null} with the rank's stdin, stdout
  and stderr as three descriptors -> {"pid": PID} (or {"error": WHY});
  {"op": "poll", "pid": PID} -> {"returncode": CODE|null}, Popen's meaning.
It ends when the other end closes. Each rank it forks speaks the worker protocol
(harness/cli/worker.py) from its join on, as a cold worker does from its start.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import sys
import threading
import traceback
from typing import Any, Optional

from harness.cli.worker import (
    answer_requests,
    join_cp_group,
    joined_cp_group,
    measured,
    protocol_stream,
    reply_load_failure,
)
from harness.run.freed_memory import keep_freed_memory
from harness.sut.worker.rank_forker import MESSAGE_BYTES

RANK_DESCRIPTORS = 3  # stdin, stdout, stderr


def _send(control: socket.socket, **fields: Any) -> None:
    control.send(json.dumps(fields).encode())


def _unsafe_to_fork() -> str:
    """Why forking this process now could hand a rank a lock held by a thread that does not
    exist in the child ("" where only this thread runs)."""
    others = [
        thread.name for thread in threading.enumerate() if thread is not threading.main_thread()
    ]
    return f"threads besides the main one run: {others}" if others else ""


def _rank(spec: str, loaded: Any, cp: list, coverage: Optional[str], prefix: str) -> int:
    """In the fork: join the group, then answer as a cold worker answers."""
    sys.stdin = os.fdopen(0, "r", closefd=False)  # the pipe just put on 0, read afresh
    out = protocol_stream()
    try:
        joined = joined_cp_group(join_cp_group(",".join(map(str, cp))))
    except Exception as error:  # the worker's answer to a failed start, with its cause
        reply_load_failure(out, error)
        return 3
    with measured(coverage, prefix) as meter:
        return answer_requests(out, spec, loaded, joined, meter)


def _fork(
    spec: str,
    loaded: Any,
    request: dict,
    descriptors: list[int],
    control: socket.socket,
    prefix: str,
) -> int:
    """Fork one rank on the descriptors the group's process sent; its pid, here."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for descriptor in descriptors:
            os.close(descriptor)
        return pid
    code = 70  # EX_SOFTWARE: the rank's own code raised before it could answer
    try:
        control.close()
        for target, descriptor in enumerate(descriptors):
            os.dup2(descriptor, target)
            os.close(descriptor)
        code = _rank(spec, loaded, request["cp"], request.get("coverage"), prefix)
    except BaseException:  # noqa: BLE001 - said on the rank's stderr, which its parent reads
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


class _Reaped:
    """The exit codes of the ranks forked here, as Popen gives them (negative: a signal)."""

    def __init__(self) -> None:
        self.codes: dict[int, int] = {}

    def returncode(self, pid: int) -> Optional[int]:
        if pid not in self.codes:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not a rank of this process's: nothing to wait for
                return None
            if not done:
                return None
            self.codes[pid] = os.waitstatus_to_exitcode(status)
        return self.codes[pid]


def serve_forks(spec: str, prefix: str, kinds: Optional[list[str]], control: socket.socket) -> int:
    os.dup2(2, 1)  # what the release prints while it loads goes where its stderr goes
    keep_freed_memory()  # inherited by every rank, as a cold worker sets it for itself
    from backends.cp_release import cpu_engine
    from harness.sut.load.loader import load_foreign

    with contextlib.suppress(ImportError):
        import tqdm  # a progress bar's monitor thread would be lost to every fork

        tqdm.tqdm.monitor_interval = 0
    cpu_engine("cpu")  # before the release is imported, as a cold rank does
    try:
        loaded = load_foreign(spec, prefix, kinds)
    except Exception as error:  # the cold worker's answer, which the group reports as its own
        said = io.StringIO()
        reply_load_failure(said, error)
        control.send(said.getvalue().encode())
        return 3
    _send(control, ok=True, cannot_fork=_unsafe_to_fork())
    reaped = _Reaped()
    while True:
        try:
            data, descriptors, _, _ = socket.recv_fds(control, MESSAGE_BYTES, RANK_DESCRIPTORS)
        except OSError:
            return 0
        if not data:  # the group's process closed its end: it wants no more ranks
            return 0
        request = json.loads(data)
        if request["op"] == "fork":
            unsafe = _unsafe_to_fork()
            if unsafe or len(descriptors) != RANK_DESCRIPTORS:
                for descriptor in descriptors:
                    os.close(descriptor)
                _send(control, error=unsafe or f"{len(descriptors)} descriptors sent, not 3")
                continue
            _send(control, pid=_fork(spec, loaded, request, descriptors, control, prefix))
        elif request["op"] == "poll":
            _send(control, returncode=reaped.returncode(request["pid"]))
        else:
            _send(control, error=f"unknown op {request['op']!r}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sut", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--control", type=int, required=True)
    parser.add_argument("--pools", type=lambda text: text.split(","))
    arguments = parser.parse_args()
    control_socket = socket.socket(fileno=arguments.control)
    sys.exit(serve_forks(arguments.sut, arguments.prefix, arguments.pools, control_socket))
