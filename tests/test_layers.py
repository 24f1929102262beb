"""The layering contract (pyproject.toml, [tool.importlinter]) holds on this tree, and breaks,
naming the import, when a lower layer imports a higher one (or the judge what it judges, or a
verb another verb): checked on a copy of the packages with one offending module written in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pools", "scenarios", "backends", "harness", "reports", "mutants")
LAYERS_CONTRACT = "harness > backends > scenarios > pools"
JUDGE_CONTRACT = "pools.judge imports none of what it judges"
VERBS_CONTRACT = "kvh verbs import no other verb"
REPORTS_CONTRACT = "reports imports nothing of ours"
MUTANTS_CONTRACT = "mutants import no harness"
ROLES_CONTRACT = "harness by role"  # cli > bench | cp > run > plan | report > sut > compare
WRITE_LOC_CONTRACT = "pools.write_loc imports nothing of ours"
MUTANT_BASES_CONTRACT = "mutant bases import no pool logic"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter on the packages under `root`, with the repository's contracts."""
    command = [
        sys.executable,
        "-c",
        "from importlinter.cli import lint_imports_command as c; c()",
        "--no-cache",
        "--no-logo",
        str(REPO / "pyproject.toml"),
    ]
    # Only `root` on the path, so the packages analysed are the ones there.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_tree_keeps_every_contract():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and f"{LAYERS_CONTRACT} KEPT" in result.stdout
    assert f"{ROLES_CONTRACT} KEPT" in result.stdout


def test_the_role_contract_names_every_part_of_harness():
    """A folder (or module) of harness/ outside the role layers could import any other unseen."""
    text = (REPO / "pyproject.toml").read_text()  # Python 3.10 has no tomllib
    contract = text[text.index(f'name = "{ROLES_CONTRACT}"') :]
    layers = re.search(r"^layers = \[(.*)\]$", contract, re.M).group(1)
    layered = {part.strip(' "') for layer in layers.split(",") for part in layer.split("|")}
    parts = {
        path.stem
        for path in (REPO / "harness").iterdir()
        if path.name not in ("__init__.py", "__main__.py", "__pycache__")
        and (path.is_dir() or path.suffix == ".py")
    }
    assert parts == layered, f"not in a layer: {sorted(parts - layered)}"


@pytest.mark.parametrize(
    "module, source, contract, named",
    [
        (
            "pools/upward.py",
            "from harness import plan\n",
            LAYERS_CONTRACT,
            "pools.upward -> harness.plan",
        ),
        (
            "scenarios/upward.py",
            "import backends.registry\n",
            LAYERS_CONTRACT,
            "scenarios.upward -> backends.registry",
        ),
        (
            "pools/judge/leak.py",
            "from pools.builtin.engines import ENGINES\n",
            JUDGE_CONTRACT,
            "pools.judge.leak -> pools.builtin.engines",
        ),
        (
            "harness/cli/repro.py",
            "from harness.cli.cp import add_arguments\n",
            VERBS_CONTRACT,
            "harness.cli.repro -> harness.cli.cp",
        ),
        (
            "reports/leak.py",
            "import pools.dtypes\n",
            REPORTS_CONTRACT,
            "reports.leak -> pools.dtypes",
        ),
        (
            "mutants/leak.py",
            "from harness import plan\n",
            MUTANTS_CONTRACT,
            "mutants.leak -> harness.plan",
        ),
        (
            "harness/compare/leak.py",
            "from harness.run import execute\n",
            ROLES_CONTRACT,
            "harness.compare.leak -> harness.run.execute",
        ),
        (
            "harness/compare/leak.py",
            "from harness.plan import baseline\n",
            ROLES_CONTRACT,
            "harness.compare.leak -> harness.plan.baseline",
        ),
        (
            "harness/report/leak.py",
            "from harness.plan import run_options\n",
            ROLES_CONTRACT,
            "harness.report.leak -> harness.plan.run_options",
        ),
        (
            "harness/sut/probe/leak.py",
            "from harness.plan import candidate\n",
            ROLES_CONTRACT,
            "harness.sut.probe.leak -> harness.plan.candidate",
        ),
        (
            "harness/sut/worker/leak.py",
            "from harness.run import execute\n",
            ROLES_CONTRACT,
            "harness.sut.worker.leak -> harness.run.execute",
        ),
        (
            "harness/compare/leak.py",
            "from harness.sut.probe import capabilities\n",
            ROLES_CONTRACT,
            "harness.compare.leak -> harness.sut.probe.capabilities",
        ),
        (
            "harness/plan/leak.py",
            "from harness.run import cells\n",
            ROLES_CONTRACT,
            "harness.plan.leak -> harness.run.cells",
        ),
        (
            "harness/run/leak.py",
            "from harness.cli import arguments\n",
            ROLES_CONTRACT,
            "harness.run.leak -> harness.cli.arguments",
        ),
        (
            "harness/run/leak.py",
            "from harness.bench import served\n",
            ROLES_CONTRACT,
            "harness.run.leak -> harness.bench.served",
        ),
        (
            "harness/cp/leak.py",
            "from harness.cli import arguments\n",
            ROLES_CONTRACT,
            "harness.cp.leak -> harness.cli.arguments",
        ),
        (
            "pools/write_loc_leak.py",
            "",
            WRITE_LOC_CONTRACT,
            "pools.write_loc -> pools.dtypes",
        ),
        (
            "mutants/base_leak.py",
            "",
            MUTANT_BASES_CONTRACT,
            "mutants.base_kwarg -> pools.builtin.engines",
        ),
    ],
    ids=[
        "pools-imports-harness",
        "scenarios-imports-backends",
        "judge-imports-an-engine",
        "a-verb-imports-a-verb",
        "reports-imports-pools",
        "mutants-import-harness",
        "compare-imports-run",
        "compare-imports-plan",
        "report-imports-plan",
        "sut-probe-imports-plan",
        "sut-worker-imports-run",
        "compare-imports-sut-probe",
        "plan-imports-run",
        "run-imports-cli",
        "run-imports-bench",
        "cp-imports-cli",
        "write-loc-imports-a-dtype",
        "a-mutant-base-imports-an-engine",
    ],
)
def test_a_forbidden_import_breaks_its_contract_and_is_named(
    tmp_path, module, source, contract, named
):
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    offender = tmp_path / module
    offender.parent.mkdir(parents=True, exist_ok=True)
    (offender.parent / "__init__.py").touch()
    offender.write_text(source)
    # Two contracts name fixed modules: the offence goes into the module itself.
    appended = {
        WRITE_LOC_CONTRACT: ("pools/write_loc.py", "import pools.dtypes\n"),
        MUTANT_BASES_CONTRACT: ("mutants/base_kwarg.py", "import pools.builtin.engines\n"),
    }
    if contract in appended:
        path, line = appended[contract]
        target = tmp_path / path
        target.write_text(target.read_text() + line)
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout
    assert named in result.stdout, result.stdout


@pytest.mark.parametrize(
    "importer, contract",
    [
        ("pools/judge/token_major.py", JUDGE_CONTRACT),
        ("mutants/base_kwarg.py", MUTANT_BASES_CONTRACT),
    ],
    ids=["the-judge", "a-mutant-base"],
)
def test_a_new_builtin_storage_is_forbidden_without_naming_it(tmp_path, importer, contract):
    """The contracts forbid pools/builtin as a whole: a storage added there tomorrow is as
    forbidden to the judge and the mutant bases as the ones there today."""
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (tmp_path / "pools" / "builtin" / "brand_new_storage.py").write_text("ROWS = 1\n")
    target = tmp_path / importer
    target.write_text(target.read_text() + "import pools.builtin.brand_new_storage\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout
    module = importer.removesuffix(".py").replace("/", ".")
    assert f"{module} -> pools.builtin.brand_new_storage" in result.stdout, result.stdout
