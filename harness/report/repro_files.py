"""Repro files: one JSON file per candidate and scenario with findings, written atomically, and
read back (format kvh-repro).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path
from typing import Optional

from harness.compare.findings import Finding
from harness.report.cell_result import CellResult
from reports.atomic import write_json_atomic
from scenarios.model import Scenario
from scenarios.serialize import ScenarioError, from_dict, to_dict

FORMAT = "kvh-repro"


VERSION = 1


class ReproError(ValueError):
    """A repro file that cannot be replayed; the message is one line."""


def run_command() -> str:
    """This process's command line as a user would type it (`kvh run ...`; a --jobs child's is
    its own `kvh run`, which checks the same cell)."""
    return shlex.join(["kvh", *sys.argv[1:]])


def repro_payload(result: CellResult, command: Optional[str] = None) -> dict:
    """The repro file's content; `command`: the run's command line (default: this process's),
    which `kvh repro` prints beside the finding (files written before it was kept lack it)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "scenario": to_dict(result.scenario),
        "candidate": result.subject.as_dict(),
        "divergence": result.divergence and result.divergence.name,
        "divergences": [d.name for d in result.divergences],
        "findings": [finding.to_dict() for finding in result.findings],
        "command": run_command() if command is None else command,
    }


def save_repro(folder: Path, result: CellResult, command: Optional[str] = None) -> Path:
    payload = repro_payload(result, command)
    # Named by what was found, not by who ran it: the same finding keeps the same file name.
    found = {key: value for key, value in payload.items() if key != "command"}
    digest = hashlib.sha1(json.dumps(found, sort_keys=True).encode()).hexdigest()[:10]
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


def recorded_command(path: Path) -> str:
    """The command line of the run that wrote the repro file, "" when it kept none."""
    command = read_repro_json(path, FORMAT, VERSION).get("command")
    return command if isinstance(command, str) else ""
