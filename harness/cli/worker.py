"""A SUT worker: loads one SUT in its own process (its own sys.path), answers protocol requests.

Run as `python -m harness.cli.worker --sut SPEC [--prefix DIR] [--coverage DIR] [--pools KINDS]`.
The protocol owns the original stdout; fd 1 is pointed at stderr so that whatever the SUT prints
cannot corrupt it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from harness.run.freed_memory import keep_freed_memory

# harness.sut.worker.protocol.VERSION, which a test keeps equal: the worker answers before it may
# import anything that imports torch.
PROTOCOL_VERSION = 4


def protocol_stream():
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def import_chain(error: BaseException, limit: int = 12) -> str:
    """The frames of the failed import, innermost last, and each chained cause: a release that
    needs another transformers shows which of its modules asked for what."""
    lines = traceback.format_exception(error)
    frames = [line.rstrip() for line in lines if line.startswith("  File ")]
    return "\n".join(frames[-limit:])


def held_scenario(request: dict, held: dict) -> Any:
    """The request's scenario: parsed and kept under its key when it comes whole, else the one
    kept under that key (None: none is). The parent decides what is kept ("forget")."""
    from scenarios.serialize import from_dict

    key = request["scenario_key"]
    if "scenario" in request:
        held[key] = from_dict(request["scenario"])
    return held.get(key)


def serve(
    spec: str,
    prefix: str | None,
    coverage: str | None = None,
    kinds: list[str] | None = None,
    cp: str | None = None,
) -> int:
    """`coverage`: a folder to measure the release's write-path lines into (kvh run --coverage,
    harness/run/release_lines.py), from once the SUT has loaded until the worker ends. `kinds`:
    the pool kinds the run plans (None: every kind; harness/sut/load/optional_pools.py)."""
    with measured(coverage, prefix) as meter:
        return _serve(spec, prefix, meter, kinds, cp)


@contextmanager
def measured(coverage: str | None, prefix: str | None) -> Iterator[Any]:
    """The LineMeter of `coverage` (None without one), which saves what it measured on the
    way out."""
    meter = None
    if coverage:
        from harness.run.release_lines import LineMeter

        meter = LineMeter(Path(coverage), prefix)
    try:
        yield meter
    finally:
        if meter is not None:
            meter.save()


def join_cp_group(cp: str) -> tuple[int, int]:
    """`--cp RANK,WORLD,ADDRESS`: this worker is a rank of a CP group (harness/sut/worker/
    cp_group.py). Joins torch.distributed's group before the release is imported, as its CPU
    switch must be set by then; returns (rank, world)."""
    from datetime import timedelta

    import torch.distributed as dist

    from backends.cp_release import COLLECTIVE_TIMEOUT_S, cpu_engine

    rank, world, address = cp.split(",", 2)
    cpu_engine("cpu")
    dist.init_process_group(
        "gloo", init_method=address, rank=int(rank), world_size=int(world),
        timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S),
    )  # fmt: skip
    return int(rank), int(world)


def _serve(
    spec: str,
    prefix: str | None,
    meter: Any = None,
    kinds: list[str] | None = None,
    cp: str | None = None,
) -> int:
    out = protocol_stream()
    keep_freed_memory()  # a release's pools are built per execution: their memory is reused
    try:
        from harness.sut.load.loader import load_foreign  # after the protocol owns stdout

        group = join_cp_group(cp) if cp else None
        loaded = load_foreign(spec, prefix, kinds)
        joined = joined_cp_group(group)
    except Exception as error:  # reported to the parent, which says why the SUT did not load
        reply_load_failure(out, error)
        return 3
    return answer_requests(out, spec, loaded, joined, meter)


def joined_cp_group(group: tuple[int, int] | None) -> dict:
    """The hello's fields of a CP rank once the release is loaded: why the release's own CP code
    does not write there (None: it joined its group)."""
    if group is None:
        return {}
    from backends.cp_release import join_group

    return {"cp_model_why": join_group(*group, "gloo")}


def write_reply(out: Any, **fields: Any) -> None:
    out.write(json.dumps({"v": PROTOCOL_VERSION, **fields}) + "\n")


def reply_load_failure(out: Any, error: BaseException) -> None:
    cause = error.__cause__ or error
    write_reply(
        out,
        ok=False,
        error=f"load failed: {type(error).__name__}: {error}",
        load_error=str(error),
        chain=import_chain(cause),
    )


def answer_requests(out: Any, spec: str, loaded: Any, joined: dict, meter: Any = None) -> int:
    """Answer the parent's requests on stdin until it closes it (or says shutdown)."""
    reply = partial(write_reply, out)

    from harness.bench.served import BenchService
    from harness.plan.candidate import Candidate
    from harness.run.execute import execute
    from harness.sut.worker.protocol import encode_execution

    # The last execution, kept so that a request for the bytes of some of its buffers is
    # answered from the same run: a release need not write the same bytes twice (torch's
    # index_put_ leaves which duplicate wins in the padding sink undefined), so re-running to
    # send bytes could send another run's.
    last = None
    bench = BenchService(loaded.module)  # `kvh bench`'s timed writes (harness/bench/served.py)
    if meter is not None:  # from here on: the checks' lines, not the loader's own trials
        meter.start()
    held: dict[int, Any] = {}  # the parent's scenarios, by its key (harness/sut/worker/client.py)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("v") != PROTOCOL_VERSION:
            reply(
                ok=False,
                error=f"protocol version {request.get('v')!r}, worker speaks {PROTOCOL_VERSION}",
            )
            continue
        for key in request.get("forget", ()):
            held.pop(key, None)
        scenario = held_scenario(request, held) if "scenario_key" in request else None
        if "scenario_key" in request and scenario is None:
            key = request["scenario_key"]
            reply(ok=False, unknown_scenario=True, error=f"no scenario held under key {key}")
        elif request["op"] == "hello":
            reply(ok=True, sut=loaded.to_dict(), pid=os.getpid(), **joined)
        elif request["op"] in ("execute", "trail"):
            described = request["candidate"]
            candidate = Candidate(
                spec,
                loaded.module,
                described.get("era") or loaded.era,  # --era forces another call convention
                "-",
                described["device"],
                described["backend"],
                described["mode"],
            )
            timeout_s = request.get("timeout_s")
            if request["op"] == "trail":  # a run of its own: `last` stays the judged one
                traced = execute(candidate, scenario, timeout_s, trail=True)
                # Whether it raised: a CP rank's peers then wait in a collective it never joins.
                raised = traced.error is not None
                reply(ok=True, release_trail=list(traced.release_trail), raised=raised)
                continue
            last = execute(candidate, scenario, timeout_s)
            reply(ok=True, execution=encode_execution(last, request.get("bytes")))
        elif request["op"] == "bytes":
            if last is None:
                reply(ok=False, error="no execution to send the bytes of")
            else:
                reply(ok=True, execution=encode_execution(last, request["bytes"]))
        elif request["op"] == "bench_open":
            reply(ok=True, **bench.open(request, scenario))
        elif request["op"] == "bench_turn":
            reply(ok=True, **bench.turn(request))
        elif request["op"] == "bench_snapshot":
            last = bench.snapshot(request["label"])
            reply(ok=True, execution=encode_execution(last, request.get("bytes")))
        elif request["op"] == "bench_close":
            bench.close()
            reply(ok=True)
        elif request["op"] == "shutdown":
            reply(ok=True)
            return 0
        else:
            reply(ok=False, error=f"unknown op {request['op']!r}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sut", required=True)
    parser.add_argument("--prefix")
    parser.add_argument("--coverage")
    parser.add_argument("--pools", type=lambda text: text.split(","))  # the run's pool kinds
    parser.add_argument("--cp")  # RANK,WORLD,ADDRESS: a rank of a CP group
    arguments = parser.parse_args()
    sys.exit(
        serve(arguments.sut, arguments.prefix, arguments.coverage, arguments.pools, arguments.cp)
    )
