"""The mutation self-check: the catalog is well formed, a few representative mutants die, and a
survivor fails `kvh mutants`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.registry import BACKENDS
from harness.cli import main
from harness.cli import mutants as mutants_command
from harness.plan.call_site_overrides import with_call_site_overrides
from harness.sut.load.loader import load_foreign
from mutants.catalog import CATALOG, FAULT_CLASSES, Mutant
from pools.builtin.eras import ERAS
from tests.conftest import FIXTURES

# The pool kinds the catalog covers; kinds added later (FP4, HND, NPU) get their mutants with them.
BASE_POOL_KINDS = {"mha", "mla", "swa_mha", "swa_mla"}
# One pool fault per kind of oracle and one faulty call site: each dies in a named regression.
SMOKE = (
    "mla_set_kv_no_unwrap",
    "no_post_init_cut",
    "mha_scale_not_in_place",
    "torch_native_cross_at_out_cache_loc",
)


def test_catalog_entries_load_as_their_era_and_name_their_regression() -> None:
    names = [m.name for m in CATALOG]
    assert len(names) == len(set(names)) and len(names) >= 25
    for mutant in CATALOG:
        assert mutant.fault in FAULT_CLASSES, mutant.name
        assert mutant.models.startswith(("#", "slip: ")), mutant.name
        assert load_foreign(mutant.module).era == mutant.era, mutant.name
        assert set(mutant.backends) <= set(BACKENDS), mutant.name


def test_catalog_covers_every_pool_kind_era_and_backend() -> None:
    live = [m for m in CATALOG if not m.equivalent]
    assert {p for m in live for p in m.pools} == BASE_POOL_KINDS
    assert {m.era for m in live} == set(ERAS)
    # Every backend that writes these pool kinds is the first one tried (the expected killer)
    # of at least one mutant.
    writers = {name for name, b in BACKENDS.items() if BASE_POOL_KINDS & set(b.pool_kinds)}
    assert {m.backends[0] for m in live} >= writers


def test_equivalent_mutants_carry_an_argument() -> None:
    for mutant in CATALOG:
        assert not mutant.equivalent or len(mutant.equivalent.split()) >= 20, mutant.name


def test_call_site_override_is_a_table_of_its_own_and_leaves_the_registry_alone() -> None:
    loaded = load_foreign("mutants.zoo.torch_native_cross_at_out_cache_loc").module
    real = BACKENDS["torch_native"]
    table, overridden = with_call_site_overrides(loaded, BACKENDS)
    assert overridden == ("torch_native",)
    assert table["torch_native"].write is not real.write
    assert table["plain"] is BACKENDS["plain"]
    assert BACKENDS["torch_native"] is real


def test_smoke_mutants_are_killed(tmp_path: Path, capsys) -> None:
    assert main(["mutants", "--only", ",".join(SMOKE), "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "mutants.json").read_text())
    assert report["summary"]["kill_rate"] == 1.0
    rows = {row["mutant"]: row for row in report["mutants"]}
    assert {rows[name]["oracle"] for name in SMOKE} == {"exception", "caller_tensors", "bytes"}
    for row in rows.values():
        assert row["outcome"] == "killed" and row["examples_to_kill"] >= 1
        assert Path(row["repro"]).is_file()
    assert list(tmp_path.glob("mutants-*.parquet"))
    assert "kill rate 4/4 (100%)" in capsys.readouterr().out


def test_a_surviving_mutant_fails_the_run(tmp_path: Path, monkeypatch, capsys) -> None:
    noop = Mutant(
        "noop",
        "dtype-cast",
        "current",
        ("mha",),
        ("plain",),
        "test fixture: no fault",
        sut=str(FIXTURES / "mutant_noop.py"),
    )
    monkeypatch.setattr(mutants_command, "CATALOG", (noop,))
    assert main(["mutants", "--profile", "dev", "--budget", "1", "--out", str(tmp_path)]) == 1
    report = json.loads((tmp_path / "mutants.json").read_text())
    assert report["summary"]["survived"] == ["noop"]
    assert report["mutants"][0]["outcome"].startswith("survived")
    assert "SURVIVED: noop" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--only", "no_such_mutant"], "unknown mutant"),
        (["--profile", "nope"], "unknown profile"),
        (["--budget", "0"], "--budget: must be > 0"),
    ],
)
def test_bad_input_is_a_usage_error(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    assert main(["mutants", *argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
