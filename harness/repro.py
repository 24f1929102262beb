"""Repro files: one JSON per finding, holding the scenario and the candidate, replayable anywhere.

`kvh repro FILE` rebuilds both sides from the file alone and judges them again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from backends.registry import BACKENDS, backend_named
from harness.call_site_overrides import with_call_site_overrides
from harness.candidate import Candidate
from harness.findings import Finding
from harness.plan import baseline_for, baseline_module, load_sut
from harness.runner import MODEL_SUT, CellResult, check_cell, check_scenario
from harness.sut.loader import parse_builtin
from pools.builtin import builtin_module
from reports.atomic import write_json_atomic
from scenarios.model import Scenario
from scenarios.serialize import ScenarioError, from_dict, to_dict

FORMAT = "kvh-repro"
VERSION = 1


class ReproError(ValueError):
    """A repro file that cannot be replayed; the message is one line."""


def repro_payload(result: CellResult) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "scenario": to_dict(result.scenario),
        "candidate": result.subject.describe(),
        "divergence": result.divergence and result.divergence.name,
        "divergences": [d.name for d in result.divergences],
        "findings": [finding.to_dict() for finding in result.findings],
    }


def save_repro(folder: Path, result: CellResult) -> Path:
    payload = repro_payload(result)
    digest = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]
    c, g = result.subject, result.scenario.geometry
    name = (
        f"{g.pool}-{g.dtype}-{c.backend}-{c.era}-{c.engine}-"
        f"{result.scenario.name or 'scenario'}-{digest}.json"
    )
    return write_json_atomic(Path(folder) / name.replace("/", "_").replace(":", "_"), payload)


def read_repro_json(path: Path, fmt: str, version: int) -> dict:
    """A repro file's JSON object, checked for its format and version; ReproError otherwise."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReproError(f"repro file {path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReproError(f"repro file {path} is not valid JSON ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != fmt:
        raise ReproError(f"{path} is not a {fmt} file (format != {fmt!r})")
    if payload.get("version") != version:
        raise ReproError(
            f"{path}: {fmt} version {payload.get('version')!r}, this kvh reads {version}"
        )
    return payload


def load_repro(path: Path) -> tuple[Scenario, dict, list[Finding]]:
    payload = read_repro_json(path, FORMAT, VERSION)
    try:
        scenario = from_dict(payload["scenario"])
        candidate = dict(payload["candidate"])
        for key in ("sut", "era", "engine", "device", "backend", "mode"):
            if not isinstance(candidate.get(key), str):
                raise ReproError(f"{path}: candidate.{key} missing or not a string")
        findings = [Finding(**finding) for finding in payload["findings"]]
    except TypeError as error:
        raise ReproError(f"{path}: malformed finding ({error})") from None
    except KeyError as missing:
        raise ReproError(f"{path}: missing field {missing}") from None
    except ScenarioError as error:
        raise ReproError(f"{path}: {error}") from None
    return scenario, candidate, findings


def rebuild_candidate(description: dict, device: Optional[str] = None) -> Candidate:
    backend_named(description["backend"])
    device = device or description["device"]
    if description["sut"] == MODEL_SUT:  # an era-table row: the baseline through one era's site
        return Candidate(
            MODEL_SUT,
            baseline_module(description["era"]),
            description["era"],
            description["engine"],
            "cpu",
            description["backend"],
            description["mode"],
        )
    if parse_builtin(description["sut"]) is not None:
        module = builtin_module(description["era"], description["engine"])
        return Candidate(
            description["sut"],
            module,
            description["era"],
            description["engine"],
            device,
            description["backend"],
            description["mode"],
        )
    loaded = load_sut(description["sut"])
    return Candidate(
        description["sut"],
        loaded.module,
        description["era"],  # the call convention it ran through (probed, or forced by --era)
        "-",
        device,
        description["backend"],
        description["mode"],
        capabilities=loaded.capabilities,
    )


def replay(path: Path, device: Optional[str] = None) -> tuple[dict, list[Finding], CellResult]:
    """Judge the repro's candidate again; returns (candidate description, old findings, result)."""
    scenario, description, old = load_repro(path)
    candidate = rebuild_candidate(description, device)
    # A mutant's faulty call site (BACKEND_OVERRIDES) replays with it.
    table, _ = with_call_site_overrides(candidate.module, BACKENDS)
    backend = table[candidate.backend]
    if candidate.sut == MODEL_SUT:
        rows = check_cell(scenario, backend, candidate.mode, [], 60.0, (candidate.era,))
        return description, old, next(r for r in rows if r.model.era == candidate.era)
    try:
        results = check_scenario(
            scenario, baseline_for(backend, candidate.mode), [candidate], 60.0, backend
        )
    finally:
        stop = getattr(candidate.module, "stop", None)
        if stop is not None:
            stop()
    return description, old, results[0]
