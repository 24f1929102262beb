"""The SUT worker protocol, version 4: one JSON object per line on stdin/stdout.

Requests:  {"v": 4, "op": "hello"}
           {"v": 4, "op": "execute", "scenario_key": K, "scenario": {...}, "forget": [keys],
            "candidate": {"backend", "mode", "device", "era"}, "bytes": null | "all" | [names]}
           {"v": 4, "op": "trail", "scenario_key", "scenario", "candidate"}: execute's run, in
            a run of its own that leaves the last execution as it was; answers the release
            functions its writes ran, "release_trail" (harness/run/release_trail.py)
           {"v": 4, "op": "bytes", "bytes": [names]}: those tensors of the last execution, from
            that same run (a release need not write the same bytes twice; version 1 ran the
            scenario again and could send another run's bytes)
           {"v": 4, "op": "bench_open", "label", "scenario_key", "scenario", "candidate",
            "threads"}: build one bench cell's timed write (harness/bench/served.py); answers
            its "timed_code", or the SUT's "error"
           {"v": 4, "op": "bench_turn", "label", "device", "cache", "phase", "budget", "per_turn"}:
            one interleaving turn of that write; answers the turn's samples "ns" and any "error"
           {"v": 4, "op": "bench_snapshot", "label"}: the write's buffers, as execute's are sent
           {"v": 4, "op": "bench_close"}: drop the timed writes
           {"v": 4, "op": "shutdown"}
Scenarios: a request that carries one names it by the parent's key. Its "scenario" (the JSON of
           scenarios/serialize.py) comes only the first time this worker process is sent that
           key; the worker keeps the parsed scenario until a request's "forget" lists the key
           (version 3 sent and parsed the whole scenario with every request: 787 requests for
           321 scenarios in the default plan of a user's file). A key the worker does not hold
           is answered {"ok": false, "unknown_scenario": true}, and the parent sends the
           request again whole.
Responses: {"v": 4, "ok": true, ...} or {"v": 4, "ok": false, "error": "one line"}; hello's
           carries {"sut": LoadedSut.to_dict(), "pid"} (version 2 sent the fields loose).
Tensors travel as {"shape", "sha256", "data"}: data is base64 of the raw uint8 bytes and is sent
only when asked for, so the common case (identical buffers) moves digests alone. Never pickle.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import asdict
from typing import Iterable, Optional, Union

import torch

from harness.compare.snapshot import ErrorPlace, Execution

VERSION = 4
Wanted = Union[None, str, Iterable[str]]


def candidate(backend: str, mode: str, device: str, era: Optional[str]) -> dict:
    """A request's "candidate": the backend's write a worker runs, in which mode, device and era."""
    return {"backend": backend, "mode": mode, "device": device, "era": era}


def trail_request(
    backend: str, mode: str, device: str, timeout_s: float, era: Optional[str]
) -> dict:
    """The "trail" request for the release functions a candidate's writes run."""
    return {
        "op": "trail",
        "timeout_s": timeout_s,
        "candidate": candidate(backend, mode, device, era),
    }


def digest(tensor: torch.Tensor) -> str:
    return hashlib.sha256(tensor.contiguous().numpy().data).hexdigest()  # hashed in place


def encode_tensor(tensor: torch.Tensor, with_data: bool) -> dict:
    message = {"shape": list(tensor.shape), "sha256": digest(tensor), "data": None}
    if with_data:
        message["data"] = base64.b64encode(tensor.contiguous().numpy().tobytes()).decode("ascii")
    return message


def decode_tensor(message: dict) -> torch.Tensor:
    raw = bytearray(base64.b64decode(message["data"]))
    if not raw:  # a buffer of no rows (a layer-split rank's peer layers): frombuffer refuses it
        return torch.empty(message["shape"], dtype=torch.uint8)
    return torch.frombuffer(raw, dtype=torch.uint8).reshape(message["shape"]).clone()


def _wants(wanted: Wanted, name: str) -> bool:
    return wanted == "all" or (wanted is not None and wanted != "all" and name in wanted)


def encode_execution(execution: Execution, wanted: Wanted) -> dict:
    return {
        "buffers": {
            name: encode_tensor(t, _wants(wanted, name)) for name, t in execution.buffers.items()
        },
        "caller": {
            name: encode_tensor(t, _wants(wanted, name)) for name, t in execution.caller.items()
        },
        "error": execution.error,
        "error_at": execution.error_at,
        # The class and the place as data: two runs raised alike only with the same class at the
        # same (stage, forward, layer, door), and a worker's run is judged like any other.
        "error_type": execution.error_type,
        "error_place": None if execution.error_place is None else asdict(execution.error_place),
        "error_cause": execution.error_cause,  # decided in the worker, where it raised
        "write_ns": execution.write_ns,
        "release_sites": list(execution.release_sites),
        "reader_dtypes": execution.reader_dtypes,
    }


def decode_execution(message: dict, known: Optional[Execution] = None) -> Execution:
    """Rebuild an Execution; a tensor sent as a digest alone is taken from `known` when the
    digests agree (the baseline), and is otherwise missing (the caller asks for its bytes)."""
    place = message.get("error_place")
    result = Execution(
        error=message["error"],
        error_at=message["error_at"],
        error_type=message.get("error_type"),
        error_place=None if place is None else ErrorPlace(**place),
        error_cause=message.get("error_cause", ""),
        write_ns=int(message["write_ns"]),
        release_sites=tuple(message.get("release_sites", ())),
        reader_dtypes=dict(message.get("reader_dtypes", {})),
    )
    for field, target in (("buffers", result.buffers), ("caller", result.caller)):
        for name, encoded in message[field].items():
            if encoded["data"] is not None:
                target[name] = decode_tensor(encoded)
            elif (
                known is not None
                and name in getattr(known, field)
                and digest(getattr(known, field)[name]) == encoded["sha256"]
            ):
                target[name] = getattr(known, field)[name]
    return result


def missing_names(message: dict, execution: Execution) -> list[str]:
    return [
        name
        for field in ("buffers", "caller")
        for name in message[field]
        if name not in getattr(execution, field)
    ]
