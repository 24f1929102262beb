"""Launch a group of ranks under torch.distributed, with a deadline and a clean teardown.

`launch` spawns `world` processes with torch.multiprocessing, each joins the default process
group over TCP on a free local port (so parallel launches, such as pytest-xdist workers, never
collide), runs an importable rank body and writes its JSON result. A rank that raises, exits or
hangs ends the group: the survivors get a grace period, then SIGTERM, then SIGKILL, and every
rank's fate is reported. Nothing is left running when `launch` returns.
"""

from __future__ import annotations

import json
import multiprocessing.connection
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from harness.sut.worker.cp_group import free_port
from reports.atomic import write_json_atomic

# The process-group backend for each torch device type; hccl needs torch_npu imported.
PROCESS_GROUP_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "npu": "hccl"}
# After the first rank fails, how long the others may take to notice and exit by themselves.
GRACE_S = 2.0

RankBody = Callable[[int, int, dict], dict]


@dataclass(frozen=True)
class RankFailure:
    rank: int
    reason: str

    def line(self) -> str:
        return f"rank {self.rank}: {self.reason}"


@dataclass
class GroupOutcome:
    world: int
    backend: str
    results: dict[int, dict] = field(default_factory=dict)  # rank -> the body's JSON result
    failures: list[RankFailure] = field(default_factory=list)
    seconds: float = 0.0
    pids: list[int] = field(default_factory=list)  # the ranks' processes, all ended

    @property
    def ok(self) -> bool:
        return not self.failures and len(self.results) == self.world


def rank_device(device_type: str, rank: int) -> str:
    """Ranks on one host share its accelerators round-robin; CPU ranks all use the CPU."""
    if device_type == "cpu":
        return "cpu"
    module = getattr(torch, device_type)
    index = rank % module.device_count()
    module.set_device(index)
    return f"{device_type}:{index}"


def _rank_main(
    rank: int,
    body: RankBody,
    world: int,
    port: int,
    device_type: str,
    collective_timeout_s: float,
    folder: str,
    payload: dict,
) -> None:
    torch.set_num_threads(1)  # ranks share the host's cores
    status: dict[str, Any] = {"rank": rank}
    try:
        if device_type == "npu":
            import torch_npu  # noqa: F401  (registers the hccl backend)
        dist.init_process_group(
            PROCESS_GROUP_BACKENDS[device_type],
            rank=rank,
            world_size=world,
            init_method=f"tcp://127.0.0.1:{port}",
            timeout=timedelta(seconds=collective_timeout_s),
        )
        status["result"] = body(rank, world, payload)
        dist.destroy_process_group()
    except BaseException as error:  # noqa: BLE001  (reported to the launcher; the rank exits non-zero)
        status["error"] = f"{type(error).__name__}: {error}".splitlines()[0]
        write_json_atomic(Path(folder) / f"rank{rank}.json", status)
        traceback.print_exc()
        raise SystemExit(1) from None
    write_json_atomic(Path(folder) / f"rank{rank}.json", status)


def _wait(processes: list, deadline: float, stop_on_failure: bool = True) -> Optional[str]:
    """Wait until every rank exits, one fails, or the deadline passes; why the wait ended early."""
    while any(p.is_alive() for p in processes):
        left = deadline - time.monotonic()
        if left <= 0:
            return "deadline"
        multiprocessing.connection.wait(
            [p.sentinel for p in processes if p.is_alive()], timeout=min(left, 0.5)
        )
        if stop_on_failure and any(p.exitcode not in (None, 0) for p in processes):
            return "a rank failed"
    return None


def _teardown(processes: list) -> set[int]:
    """SIGTERM, then SIGKILL, whatever still runs; the ranks that had to be stopped."""
    stopped = {rank for rank, p in enumerate(processes) if p.is_alive()}
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
    return stopped


def _fate(
    rank: int,
    exitcode: Optional[int],
    status: Optional[dict],
    stopped: bool,
    why: Optional[str],
    timeout_s: float,
) -> Optional[str]:
    if stopped:
        if why == "deadline":
            return f"hung: still running at the {timeout_s:g} s deadline; terminated"
        return f"still running {GRACE_S:g} s after a peer failed; terminated"
    if status is not None and "error" in status:
        return f"raised {status['error']}"
    if exitcode != 0:
        return (
            f"killed by signal {-exitcode}" if exitcode < 0 else f"exited with code {exitcode}"
        ) + " without reporting a result"
    if status is None:
        return "exited without reporting a result"
    return None


def launch(
    body: RankBody,
    world: int,
    payload: dict,
    *,
    device_type: str = "cpu",
    timeout_s: float = 120.0,
    collective_timeout_s: float = 60.0,
) -> GroupOutcome:
    """Run `body(rank, world, payload)` on `world` ranks; every rank's result or fate.

    `body` must be importable by name (spawned ranks import it); `payload` must be JSON-able.
    """
    backend = PROCESS_GROUP_BACKENDS.get(device_type)
    if backend is None:
        raise ValueError(
            f"no process-group backend for device type {device_type!r}; "
            f"choose from {', '.join(PROCESS_GROUP_BACKENDS)}"
        )
    outcome = GroupOutcome(world, backend)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kvh-ranks-") as folder:
        args = (body, world, free_port(), device_type, collective_timeout_s, folder, payload)
        context = mp.start_processes(
            _rank_main, args=args, nprocs=world, join=False, daemon=True, start_method="spawn"
        )
        processes = context.processes
        outcome.pids = [process.pid for process in processes]
        try:
            why = _wait(processes, started + timeout_s)
            if why == "a rank failed":  # the others may notice the broken group by themselves
                _wait(processes, time.monotonic() + GRACE_S, stop_on_failure=False)
        finally:
            stopped = _teardown(processes)
        for rank, process in enumerate(processes):
            path = Path(folder) / f"rank{rank}.json"
            status = json.loads(path.read_text()) if path.exists() else None
            reason = _fate(rank, process.exitcode, status, rank in stopped, why, timeout_s)
            if reason is not None:
                outcome.failures.append(RankFailure(rank, reason))
            elif status is not None:
                outcome.results[rank] = status["result"]
    outcome.seconds = time.monotonic() - started
    return outcome
