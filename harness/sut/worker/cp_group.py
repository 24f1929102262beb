"""A release's context-parallel cells in `kvh run`: a worker for each rank of a torch.distributed
group.

The cp backend's write all-gathers the ranks' shares over the attention CP group, so the release's
own code needs peers in other processes (backends/cp_release.py). Its cells get this group in
place of the release's worker: `world` workers of the same release, each joined at start to the
group (gloo, a free local port) and to the release's own CP group. The workers are forked from a
process that loaded the release once (harness/sut/worker/rank_forker.py), so the group starts
again in a fork and a join (on Linux; elsewhere each rank starts cold). Every request goes to every
rank, since each rank's write needs the others' shares; each rank writes the full sequence into
its own pool. The check is judged on rank 0's execution, unless a rank's differs from the
baseline's: then on the first such rank's, which names its rank.

A release that cannot join (0.5.14 has no CP strategy to build) answers with why in its hello; its
ranks then run the model, as its worker would. A rank that fails, hangs or raises where its peers
did not leaves the group out of step: the whole group is stopped and starts again, on a new
port, at the next request.
"""

from __future__ import annotations

import selectors
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import torch

from backends.context import CP_RANKS
from harness.sut.worker.client import MIN_GRACE_S, IsolatedSut, Submitted, WorkerFailure
from harness.sut.worker.protocol import trail_request
from harness.sut.worker.rank_forker import FORKS_RANKS, RankForker

if TYPE_CHECKING:
    from harness.compare.snapshot import Execution
    from scenarios.model import Scenario

CP_WORLD = CP_RANKS
# How long a rank's peers may take to answer once it raised where the baseline did not, before
# they are taken to wait in a collective it never joins: a peer that raised too answers at once.
PEER_GRACE_S = 2.0


def free_port() -> int:
    """A TCP port nobody listens on now (bind port 0 on the loopback, read it, release it): a
    group's rendezvous, so parallel groups (pytest-xdist workers) never collide."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class CpGroup:
    """The ranks of one installed release (the folder holding its `sglang`); started at the
    first request. Quacks like IsolatedSut where kvh run asks a worker (submit, trail, stop)."""

    def __init__(
        self,
        prefix: str,
        world: int = CP_WORLD,
        coverage: Optional[str] = None,
        kinds: Optional[list[str]] = None,
    ):
        self.prefix, self.world, self.coverage, self.kinds = prefix, world, coverage, kinds
        self.ranks: list[IsolatedSut] = []
        # The ranks are forked from one process that loaded the release once: a group started
        # again after a rank raised alone costs a fork and a join, not each rank's cold start.
        self.forker = RankForker(prefix, kinds) if FORKS_RANKS else None

    def _start(self) -> None:
        address = f"tcp://127.0.0.1:{free_port()}"
        if self.forker is not None:
            self.forker.start()  # a release that does not load: "refused", as a rank's hello
            if self.forker.cannot_fork:
                print(
                    f"kvh: {self.prefix}'s CP ranks start cold: the loaded release cannot be "
                    f"forked ({self.forker.cannot_fork})",
                    file=sys.stderr,
                )
                self.forker.stop()
                self.forker = None
        self.ranks = [
            IsolatedSut(
                "sglang",
                prefix=self.prefix,
                # Every rank's lines: ranks hold different shares and take different branches
                # (only the shorter share is padded for the gather), and a campaign stages a
                # mutant by the lines any rank ran (harness/run/mutant_reach.py).
                coverage=self.coverage,
                kinds=self.kinds,
                cp=(rank, self.world, address),
                forker=self.forker,
            )
            for rank in range(self.world)
        ]
        for worker in self.ranks:
            worker.spawn()
        for worker in self.ranks:
            worker.hello()
        why = self.ranks[0].cp_model_why
        if why:  # a limit, not a finding: its cp cells run the model on these ranks
            print(f"kvh: {self.prefix}'s CP group runs the cp model: {why}", file=sys.stderr)

    def _running(self) -> None:
        """Every rank up, or the whole group started again (a lone rank cannot rejoin)."""
        if self.ranks and all(worker.process is not None for worker in self.ranks):
            return
        self.stop_ranks()
        try:
            self._start()
        except WorkerFailure:
            self.stop_ranks()
            raise

    def stop_ranks(self) -> None:
        """Stop every rank; the next request starts the group again."""
        for worker in self.ranks:
            worker.stop()
        self.ranks = []

    def stop(self) -> None:
        """Stop the ranks and their forker: the run is over."""
        self.stop_ranks()
        if self.forker is not None:
            self.forker.stop()

    def submit(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        device: str,
        timeout_s: float = 60.0,
        era: Optional[str] = None,
    ) -> GroupSubmitted:
        try:
            self._running()
        except WorkerFailure as failure:
            return GroupSubmitted(self, [], failure)
        sent = [
            worker.submit(scenario, backend, mode, device, timeout_s, era) for worker in self.ranks
        ]
        return GroupSubmitted(self, sent)

    def trail(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        device: str,
        timeout_s: float = 60.0,
        era: Optional[str] = None,
    ) -> tuple[str, ...]:
        """Rank 0's release trail; every rank runs the write, as its gather needs them all. Once
        a rank's run has raised, a peer that has not answered PEER_GRACE_S later waits in a
        collective the raiser never joins: it is abandoned, as a check's is, and the trail is
        the lowest answering rank's (measured: 35 s a trail with rank 1 raising alone, the
        collective's timeout, for the 2 s grace)."""
        self._running()
        request = trail_request(backend, mode, device, timeout_s, era)
        for worker in self.ranks:
            worker.post(request, scenario)
        limit = time.monotonic() + timeout_s + MIN_GRACE_S
        pending, answers = dict(enumerate(self.ranks)), {}
        grace_ends: Optional[float] = None
        try:
            while pending:
                streams = {rank: worker.process.stdout for rank, worker in pending.items()}
                rank = _first_ready(streams, grace_ends or limit)
                if rank is None and grace_ends is not None:
                    break
                rank = min(pending) if rank is None else rank  # its answer() says it hung
                answers[rank] = pending.pop(rank).answer(timeout_s + MIN_GRACE_S)
                if grace_ends is None and answers[rank].get("raised"):
                    grace_ends = time.monotonic() + PEER_GRACE_S
        except WorkerFailure:
            self.stop_ranks()
            raise
        if pending:
            self.stop_ranks()  # the next request starts a fresh group
        return tuple(answers[min(answers)]["release_trail"])


class GroupSubmitted:
    """One execute request sent to every rank."""

    def __init__(
        self, group: CpGroup, sent: list[Submitted], failure: Optional[WorkerFailure] = None
    ):
        self.group, self.sent, self.failure = group, sent, failure

    def result(self, known: Optional[Execution]) -> Execution:
        from harness.compare.snapshot import Execution

        if self.failure is not None:
            return Execution(
                error=f"CP group: {self.failure}", error_at=f"SUT worker ({self.failure.kind})"
            )
        executions = self._answers(known)
        raised = {execution.error is not None for execution in executions.values()}
        out_of_step = len(executions) < len(self.sent) or len(raised) > 1
        if out_of_step or any(_worker_failed(execution) for execution in executions.values()):
            self.group.stop_ranks()  # the next request starts a fresh group
        rank = next(
            (rank for rank, execution in sorted(executions.items()) if _differs(execution, known)),
            0,
        )
        chosen = executions[rank]
        if rank:
            where = f"rank {rank} of {self.group.world}"
            chosen.release_sites = tuple(f"{where}: {site}" for site in chosen.release_sites)
            if chosen.error is not None:
                chosen.error = f"{where}: {chosen.error}"
        return chosen

    def _answers(self, known: Optional[Execution]) -> dict[int, Execution]:
        """Each rank's execution, by rank, in the order they answer. Once a rank has raised where
        the baseline did not, its peers wait in a collective it never joins until the group's
        timeout (backends/cp_release.py COLLECTIVE_TIMEOUT_S): those that have not answered
        PEER_GRACE_S later are abandoned, so the check costs its raise, not the timeout. The
        chosen rank is unchanged by it: the first rank, in rank order, whose execution is not
        the baseline's, and a rank that raised first is such a rank."""
        pending = dict(enumerate(self.sent))
        executions: dict[int, Execution] = {}
        grace_ends: Optional[float] = None
        while pending:
            rank = _first_answering(pending, grace_ends)
            if rank is None:  # the grace ended
                break
            execution = executions[rank] = pending.pop(rank).result(known)
            if grace_ends is None and execution.error is not None and _differs(execution, known):
                grace_ends = time.monotonic() + PEER_GRACE_S
        for submitted in pending.values():
            submitted.abandon()
        return executions

    def abandon(self) -> None:
        self.group.stop_ranks()


def _first_answering(pending: dict[int, Submitted], grace_ends: Optional[float]) -> Optional[int]:
    """The lowest rank of `pending` that has answered, waiting for one until `grace_ends` (None
    once the grace is over and none answered). Before any grace, it waits until the earliest of
    their limits and then names the lowest rank, whose result() reports its hang."""
    unstarted = [rank for rank, submitted in pending.items() if submitted.failure is not None]
    if unstarted:  # a rank whose worker never started has its answer already
        return min(unstarted)
    until = grace_ends
    if until is None:
        until = min(submitted.limit_at() for submitted in pending.values())
    streams = {rank: submitted.worker.process.stdout for rank, submitted in pending.items()}
    ready = _first_ready(streams, until)
    if ready is not None:
        return ready
    return None if grace_ends is not None else min(pending)


def _first_ready(streams: dict[int, Any], until: float) -> Optional[int]:
    """The lowest rank whose stream has an answer to read, waiting for one until `until` (None:
    none by then)."""
    selector = selectors.DefaultSelector()
    for rank, stream in streams.items():
        selector.register(stream, selectors.EVENT_READ, rank)
    try:
        ready = [key.data for key, _ in selector.select(max(0.0, until - time.monotonic()))]
    finally:
        selector.close()
    return min(ready) if ready else None


def _worker_failed(execution: Execution) -> bool:
    return (execution.error_at or "").startswith("SUT worker")


def _differs(execution: Execution, known: Optional[Execution]) -> bool:
    """Whether a rank's execution is not the baseline's: another error, or other bytes."""
    if known is None:
        return False
    if execution.error != known.error:
        return True
    return any(
        name not in execution.buffers
        or not (tensor is execution.buffers[name] or torch.equal(tensor, execution.buffers[name]))
        for name, tensor in known.buffers.items()
    )
