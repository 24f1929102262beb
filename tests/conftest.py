"""Shared helpers for the harness's own tests: paths, the `kvh` entry point in a subprocess,
builtin scenarios by name, and where the installed sglang lives."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

import pytest

from harness.run.freed_memory import keep_freed_memory
from scenarios.defaults import default_scenarios
from scenarios.model import Scenario
from scenarios.serialize import to_dict
from tests.helpers.xdist_devices import pin_worker_devices
from tests.helpers.xdist_threads import share_threads

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SGLANG_INSTALL_HINT = "sglang is not installed (pip install --no-deps sglang==0.5.23)"


def pytest_configure(config) -> None:
    """Each xdist worker: its own device where there are several, its share of the cores, and
    a freed pool's memory kept for the next, as `kvh` keeps it."""
    pin_worker_devices(os.environ)
    share_threads(os.environ)
    keep_freed_memory()


def pytest_collection_modifyitems(items: list) -> None:
    """Modules with a `slow` test run first, each kept whole (its module fixtures are set up
    once): under the README's `-n 2 --dist worksteal` the long tests start early and an idle
    worker takes short ones queued on the other, instead of one core running a 90 s test alone."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: order kept within


def check_records(results_dir: Path):
    """The `check` rows a `kvh run` appended to the results store in `results_dir`."""
    from reports.store import load

    return load(results_dir).of("check")


def run_kvh(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run the real `kvh` entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scenario_named(pool: str, dtype: str, name: str, seed: int = 0) -> Scenario:
    """The builtin scenario called `name` (a KeyError lists the names there are)."""
    by_name = {scenario.name: scenario for scenario in default_scenarios(pool, dtype, seed)}
    if name not in by_name:
        raise KeyError(f"no builtin scenario {name!r} for {pool}/{dtype}: {sorted(by_name)}")
    return by_name[name]


def scenario_file(folder: Path, change: Callable[[dict], None] = lambda data: None) -> str:
    """The builtin mha/bf16 `decode` scenario as a user's JSON file, after `change(data)`."""
    data = to_dict(scenario_named("mha", "bf16", "decode"))
    change(data)
    path = folder / "scenario.json"
    path.write_text(json.dumps(data))
    return str(path)


def installed_sglang_root() -> Optional[Path]:
    """The folder holding the installed `sglang` package (its source, not imported), if any."""
    module = sys.modules.get("sglang")
    spec = module.__spec__ if module is not None else importlib.util.find_spec("sglang")
    return None if spec is None or not spec.origin else Path(spec.origin).parent.parent


@pytest.fixture
def fixture_sut():
    return lambda name: str(FIXTURES / f"{name}.py")


def skip_unless_installed(*releases: str) -> None:
    """Skip, with why, unless every release is in the release cache (the README's test command
    installs the ones the tests name; elsewhere the reason says how)."""
    from harness.sut.load.environments import not_ready_reason

    for release in releases:
        reason = not_ready_reason(release)
        if reason:
            pytest.skip(reason)


# The seeded campaign samples CI judges, and the command that repeats each.
CAMPAIGN_SAMPLES = {
    "rename_campaign": "kvh mutants --sut sglang --renames",  # tests/test_release_renames.py
    "mutation_campaign": "kvh mutants --sut sglang --mutate --function "  # test_release_mutation
    "MHATokenToKVPool.set_kv_buffer",
}


def pytest_terminal_summary(terminalreporter) -> None:
    """The campaign samples as CI ran them (the rename and the mutation campaign's), so that a
    run's log says which seed to give `kvh mutants` to judge the same names or mutants."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
        "failed", []
    ):
        for name, value in getattr(report, "user_properties", ()):
            if name in CAMPAIGN_SAMPLES and report.when == "call":
                terminalreporter.write_line(
                    f"{name.replace('_', ' ')} sample ({report.outcome}): "
                    f"{CAMPAIGN_SAMPLES[name]} {value}"
                )
