"""`kvh matrix`: what this machine checks and what it cannot, and why, as tables and JSON.

Two views: the store-engine capability matrix (engine x pool kind x dtype x layout x device,
harness/plan/engine_matrix.py) and the backend coverage (backend x pool kind x mode x era, with each
backend's declared skips and divergences, backends/registry.py).
"""

from __future__ import annotations

import argparse
from itertools import groupby
from pathlib import Path
from typing import Any

import pandas as pd

from backends.context import CP_RANKS
from backends.registry import BACKENDS
from harness.bench.timers import GPU_ONLY_TIMING
from harness.exit_codes import EXIT_OK, UsageError
from harness.plan.devices import (
    backend_device_reason,
    discover,
    natural_device,
    unavailable_reason,
)
from harness.plan.engine_matrix import LAYOUTS, CellStatus, matrix
from harness.plan.sut_choice import SutChoice, close_suts, load_sut
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import LoadedSut
from harness.sut.probe.census_call_sites import BACKEND_MODELS
from harness.sut.probe.census_compare import files_under
from pools.dtypes import DTYPES
from reports.atomic import write_json_atomic
from reports.markdown import markdown_table
from scenarios.model import POOL_KINDS

DEFAULT_OUT = Path("kvh-out") / "matrix.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"JSON file to write (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--sut",
        help="also say, per backend, whether this SGLang SUT's own backend code runs (sglang, "
        "sglang==X, sglang@DIR) or the model does, and why",
    )
    parser.set_defaults(handler=main)


def _items(value: Any) -> list:
    return [
        item.as_dict()
        if hasattr(item, "as_dict")
        else {key: getattr(item, key, "") for key in ("name", "eras", "reason", "pr")}
        for item in value
    ]


def _runs_as(backend: str) -> str:
    """How a cell of `backend` runs on an SGLang SUT: the release's own code, or the call-site
    model, checked against the release's source where the census has a model of it."""
    real = BACKENDS[backend].real_code
    if BACKENDS[backend].grouped:
        return (
            f"real code ({real.cls}) on a CP group of ranks (kvh run, kvh cp) where the SGLang "
            "SUT offers its CP write; the model elsewhere"
        )
    if real is not None:
        return f"real code ({real.cls}) where the SGLang SUT imports it; the model elsewhere"
    if backend in BACKEND_MODELS:
        return "model, checked against the release's source (census)"
    return "model (the harness's canonical call; no release file)"


def backend_coverage() -> list[dict]:
    """Per backend: its natural device and whether it is
    here, what it covers, skips, divergences."""
    rows = []
    for backend in BACKENDS.values():
        device_type = backend.device_type
        reason = backend_device_reason(device_type)
        rows.append(
            {
                "backend": backend.name,
                "device_type": device_type,
                "device": natural_device(device_type),
                "device_here": reason is None,
                "device_reason": reason or "",
                "pool_kinds": list(backend.pool_kinds),
                "modes": list(backend.modes),
                "eras": list(backend.eras),
                "dtypes": list(backend.dtypes),
                "summary": backend.summary,
                "runs_as": _runs_as(backend.name),
                "skips": _items(backend.skips),
                "divergences": _items(backend.divergences),
            }
        )
    return rows


def real_code_rows(loaded: LoadedSut) -> list[dict]:
    """Per backend: whether `loaded`'s own backend class writes its cells (and in which modes),
    or why the model does (the import failure measured, or the declared gap)."""
    missing = dict(loaded.real_code_missing)
    rows = []
    for backend in BACKENDS.values():
        real = backend.real_code
        if not _has_file(loaded, backend):
            files = ", ".join(backend.census.files)
            rows.append({"backend": backend.name, "runs_as": ABSENT, "why": f"no {files}"})
            continue
        if backend.name in loaded.real_code and backend.grouped:
            # A write the release makes inside a process group: on the ranks of a CP group.
            if loaded.no_cp_write:
                runs, why = "model", f"{loaded.no_cp_write}; {backend.real_code_gap}"
            else:
                runs, why = (
                    "release code",
                    (
                        f"{real.where} on a CP group of {CP_RANKS} gloo ranks (kvh run's, "
                        "harness/sut/worker/cp_group.py; kvh cp's); modes "
                        + ",".join(backend.modes)
                    ),
                )
        elif backend.name in loaded.real_code:
            modes = [m for m in backend.modes if real.runs_in(m)]
            runs, why = "release code", f"{real.where}; modes {','.join(modes)}"
            if len(modes) < len(backend.modes):
                why += f"; the model in the others: {real.why_model}"
            elif real.model_kinds:
                why += f"; the model on {','.join(real.model_kinds)}: {real.why_model}"
        elif backend.name in missing:
            runs, why = "model", missing[backend.name]
        elif backend.census is None:
            runs, why = "model", "the harness's canonical call: no release file to run"
        else:
            runs, why = "model", backend.real_code_gap or "no real-code driver declared"
        rows.append({"backend": backend.name, "runs_as": runs, "why": why})
    return rows


# A backend whose release file this release does not have (0.5.23 has no cutlass_mla).
ABSENT = "no file here"


def _has_file(loaded: LoadedSut, backend) -> bool:
    """Whether the release under `loaded.root` has one of the backend's census files (a backend
    without a census, or a SUT without a package source, counts as having it)."""
    return (
        backend.census is None or not loaded.root or bool(files_under(backend.census, loaded.root))
    )


def _covered(values: set, universe) -> str:
    return "all" if values >= set(universe) else ",".join(v for v in universe if v in values)


def engine_rows(cells: list[CellStatus]) -> list[tuple[str, ...]]:
    """Cells folded per (layout, status, reason), listing the engines, devices, pools and dtypes."""
    order = {layout: index for index, layout in enumerate(LAYOUTS)}
    key = lambda c: (order[c.layout], c.status, c.reason)  # noqa: E731
    rows = []
    for (_, status, reason), group in groupby(sorted(cells, key=key), key):
        group = list(group)
        engines = list(dict.fromkeys(c.engine for c in group))
        devices = list(dict.fromkeys(c.device for c in group))
        rows.append(
            (
                ",".join(engines),
                ",".join(devices),
                group[0].layout,
                _covered({c.pool for c in group}, POOL_KINDS),
                _covered({c.dtype for c in group}, DTYPES),
                status,
                reason,
            )
        )
    return rows


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    return markdown_table(pd.DataFrame(rows, columns=list(header)))


def render(devices: list, cells: list[CellStatus], backends: list[dict]) -> str:
    parts = [
        "## Devices",
        "",
        _table(
            ("device", "status", "reason or detail", "what"),
            [
                (
                    d.name,
                    "checked" if d.available else "skipped",
                    d.detail if d.available else d.reason,
                    d.description,
                )
                for d in devices
            ],
        ),
    ]
    parts += [
        "",
        "## Store engines (engine x pool kind x dtype x layout x device)",
        "",
        _table(
            ("engine", "device", "layout", "pools", "dtypes", "status", "reason"),
            engine_rows(cells),
        ),
        "",
        "Layouts: " + "; ".join(f"{name}: {text}" for name, text in LAYOUTS.items()),
    ]
    parts += [
        "",
        "## Backends (natural device from the backend registry; `kvh run --device` overrides it)",
        "",
        _table(
            ("backend", "device", "here", "pool kinds", "modes", "eras", "dtypes", "runs as"),
            [
                (
                    b["backend"],
                    b["device_type"],
                    "yes" if b["device_here"] else f"no: {b['device_reason']}",
                    ",".join(b["pool_kinds"]),
                    ",".join(b["modes"]),
                    ",".join(b["eras"]),
                    _covered(set(b["dtypes"]), DTYPES),
                    b["runs_as"],
                )
                for b in backends
            ],
        ),
    ]
    no_cuda = unavailable_reason("cuda")  # both paths need one
    parts += [
        "",
        "## Bench timing paths (`kvh bench`)",
        "",
        _table(
            ("path", "here", "needs"),
            [
                (path, f"no: {no_cuda}" if no_cuda else "yes", needs)
                for path, needs in GPU_ONLY_TIMING.items()
            ],
        ),
    ]
    notes = [
        f"- {b['backend']}: skip `{s.get('name', '')}`: {s.get('reason', '')}"
        for b in backends
        for s in b["skips"]
    ]
    notes += [
        f"- {b['backend']}: divergence `{d.get('name', '')}` ({d.get('pr', '')}): "
        f"{d.get('reason', '')}"
        for b in backends
        for d in b["divergences"]
    ]
    if notes:
        parts += ["", "### Declared backend skips and divergences", "", *notes]
    return "\n".join(parts) + "\n"


def render_real_code(spec: str, loaded: LoadedSut, rows: list[dict]) -> str:
    released = [
        row
        for row in rows
        if BACKENDS[row["backend"]].census is not None and row["runs_as"] != ABSENT
    ]
    real = sum(row["runs_as"] == "release code" for row in released)
    title = (
        f"## Backends on {spec} (version {loaded.version}): {real} of the {len(released)} with a "
        "release file run as release code"
    )
    table = _table(("backend", "runs as", "where, or why not"), [tuple(r.values()) for r in rows])
    return f"{title}\n\n{table}\n"


def _sut_rows(spec: str) -> tuple[str, list[dict]]:
    try:
        loaded = load_sut(spec)
    except SutLoadError as error:
        raise UsageError(f"--sut {spec}: {error}") from None
    try:
        rows = real_code_rows(loaded)
        return render_real_code(spec, loaded, rows), rows
    finally:
        close_suts([SutChoice(spec, ("-",), loaded)])


def main(arguments: argparse.Namespace) -> int:
    if arguments.out.exists() and arguments.out.is_dir():
        raise UsageError(f"--out {arguments.out} is a folder; give a JSON file path")
    devices, cells, backends = discover(), matrix(), backend_coverage()
    print(render(devices, cells, backends))
    report = {
        "devices": [d.as_dict() for d in devices],
        "engines": [c.as_dict() for c in cells],
        "backends": backends,
        "bench_timing": [{"path": path, "needs": needs} for path, needs in GPU_ONLY_TIMING.items()],
    }
    if arguments.sut:
        text, report["real_code"] = _sut_rows(arguments.sut)
        print(text)
    write_json_atomic(arguments.out, report)
    print(f"matrix: {arguments.out}")
    return EXIT_OK
