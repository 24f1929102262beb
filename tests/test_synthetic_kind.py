"""A pool kind is one record module, with its builtin pool and judge registered beside it: a
synthetic one (tests/fixtures/synthetic_kind/, an MHA pool whose K and V share a fused row),
found through KVH_KIND_PATHS with no other file touched, runs and passes in `kvh run` (and a
wrong builtin of it fails), and shows in `kvh matrix`, the coverage table, the value oracle's
scope and the write-door census."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backends.registry import BACKENDS, with_kinds_that_name_them
from pools.kinds.registry import KIND_PATHS_VARIABLE, KINDS
from pools.kinds.spec import PoolKind
from tests.conftest import FIXTURES, REPO

pytestmark = pytest.mark.e2e

FOLDER = FIXTURES / "synthetic_kind"
NAME = "fused_kv_mha"
CLASS = "FusedKVTokenToKVPool"
# A kind whose buffers are not K/V per layer: one fused byte buffer a layer with a scale block,
# found through the buffers its record names.
PAGED_FOLDER = FIXTURES / "paged_scale_kind"
PAGED_NAME = "paged_scale_mha"


def kvh_with_kind(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` (or `python -c` with args[0] == "-c"), with `folder` on
    KVH_KIND_PATHS."""
    command = list(args) if args[0] == "-c" else ["-m", "harness", *args]
    return subprocess.run(
        [sys.executable, *command],
        cwd=REPO,
        env={**os.environ, KIND_PATHS_VARIABLE: str(folder)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "folder, name, stem",
    [(FOLDER, NAME, "fused_kv"), (PAGED_FOLDER, PAGED_NAME, "paged_scale")],
    ids=["fused-kv", "paged-scale"],
)
def test_the_kind_is_its_folder_and_is_named_nowhere_else(folder, name, stem):
    assert sorted(path.name for path in folder.glob("*.py")) == [
        f"{stem}.py",
        f"{stem}_builtin.py",
        f"{stem}_judge.py",
    ]
    assert name not in KINDS  # only where its folder is named
    mentions = [
        path.relative_to(REPO).as_posix()
        for part in ("backends", "harness", "pools", "scenarios", "reports", "mutants", "docs")
        for path in (REPO / part).rglob("*")
        if path.is_file() and path.suffix in (".py", ".md") and name in path.read_text()
    ]
    assert mentions == [] or mentions == ["docs/pools.md"], mentions


@pytest.mark.slow
def test_kvh_run_judges_it_and_its_coverage_row_shows(tmp_path):
    result = kvh_with_kind(FOLDER, "run", "--pool", NAME, "--dtype", "bf16", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("PASS: "))
    passed = int(verdict.split(" checks: ")[1].split(" passed")[0])
    assert passed > 0 and " 0 with findings" in verdict and " 0 skipped" in verdict
    coverage = (tmp_path / "summary.md").read_text().split("## Coverage")[1]
    assert re.search(rf"\| {NAME} +\| bf16 +\| plain +\| extend +\|", coverage), coverage


BROKEN_BUILTIN = """
from pools.kinds.pool_classes import builtin_pool


class OverlappingStorage:  # V's view starts one element early: its first element is K's last
    def _create_buffers(self):
        self.kv_buffer = self._rows(self.head_num, self.head_dim + self.v_head_dim)
        self.k_buffer = [fused[..., : self.head_dim] for fused in self.kv_buffer]
        self.v_buffer = [
            fused[..., self.head_dim - 1 : self.head_dim - 1 + self.v_head_dim]
            for fused in self.kv_buffer
        ]


@builtin_pool("fused_kv_mha")
def fused_kv_pool(module):
    return type("FusedKVTokenToKVPool", (OverlappingStorage, module.MHATokenToKVPool), {})
"""


@pytest.mark.slow
def test_a_wrong_builtin_of_the_kind_is_a_finding(tmp_path):
    """The comparison could fail: the same record and judge, a builtin whose V overlaps K."""
    folder = tmp_path / "broken_kind"
    folder.mkdir()
    for name in ("fused_kv.py", "fused_kv_judge.py"):
        shutil.copy(FOLDER / name, folder / name)
    (folder / "fused_kv_builtin.py").write_text(BROKEN_BUILTIN)
    out = tmp_path / "out"
    result = kvh_with_kind(folder, "run", "--pool", NAME, "--dtype", "bf16", "--out", str(out))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "FAIL: " in result.stdout and "[bytes]" in (out / "summary.md").read_text()


@pytest.mark.slow
def test_a_kind_of_one_fused_buffer_a_layer_is_judged_through_its_records_buffers(tmp_path):
    """Its one buffer a layer (K and V bytes, then a scale block) is read as its record says: the
    run passes, and a builtin that puts each scale entry one slot up fails with a bytes finding
    in that buffer."""
    result = kvh_with_kind(
        PAGED_FOLDER, "run", "--pool", PAGED_NAME, "--dtype", "bf16", "--out", str(tmp_path / "a")
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("PASS: "))
    assert " 0 with findings" in verdict and " 0 skipped" in verdict
    assert int(verdict.split(" checks: ")[1].split(" passed")[0]) > 0
    broken = tmp_path / "broken_kind"
    broken.mkdir()
    for name in ("paged_scale.py", "paged_scale_judge.py"):
        shutil.copy(PAGED_FOLDER / name, broken / name)
    builtin = (PAGED_FOLDER / "paged_scale_builtin.py").read_text()
    store = "entries[loc.to(device=entries.device, dtype=torch.int64)]"
    assert store in builtin
    (broken / "paged_scale_builtin.py").write_text(builtin.replace(store, store[:-1] + " + 1]"))
    out = tmp_path / "b"
    result = kvh_with_kind(
        broken, "run", "--pool", PAGED_NAME, "--dtype", "bf16", "--out", str(out)
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert (
        "[bytes] written bytes differ from the baseline at buffer L0.fused"
        in (out / "summary.md").read_text()
    )


@pytest.mark.slow
def test_kvh_matrix_lists_it_on_every_engine_that_runs_mha(tmp_path):
    result = kvh_with_kind(FOLDER, "matrix", "--out", str(tmp_path / "matrix.json"))
    assert result.returncode == 0, result.stderr
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    plain = next(entry for entry in matrix["backends"] if entry["backend"] == "plain")
    assert NAME in plain["pool_kinds"]
    assert sum(NAME in line for line in result.stdout.splitlines()) >= 3


CENSUS_PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from harness.compare.values import VALUE_SCOPE
    from harness.sut.probe.write_doors import write_doors
    doors = write_doors(Path(sys.argv[1]), {"FusedKVTokenToKVPool"})
    print(json.dumps({
        "value_scope": list(VALUE_SCOPE["plain"].pools),
        "doors": [[door.cls, door.method, list(door.driven_by)] for door in doors],
    }))
    """
)


def test_the_value_oracle_judges_it_and_the_census_drives_its_door(tmp_path):
    """A release that offers the kind's class: its door is driven by the kind's cells."""
    pool_file = tmp_path / "sglang" / "srt" / "mem_cache" / "fused_pool.py"
    pool_file.parent.mkdir(parents=True)
    pool_file.write_text(
        f"class {CLASS}:\n"
        "    def set_kv_buffer(self, layer, loc, cache_k, cache_v):\n"
        "        self.kv_buffer[layer.layer_id][loc] = cache_k\n"
    )
    result = kvh_with_kind(FOLDER, "-c", CENSUS_PROBE, str(tmp_path))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    assert NAME in found["value_scope"]
    assert found["doors"] == [[CLASS, "set_kv_buffer", [NAME]]]


def test_a_record_names_only_registered_backends_and_may_keep_out_of_value_scope():
    def record(**fields) -> PoolKind:
        return PoolKind("outside", "OutsidePool", "token-major", 999, **fields)

    with pytest.raises(ValueError, match="names backend 'nope'"):
        with_kinds_that_name_them(BACKENDS, [record(backends=("nope",))])
    table = with_kinds_that_name_them(
        BACKENDS, [record(backends=("plain",), values_judged_elsewhere="its own oracle")]
    )
    assert "outside" in table["plain"].pool_kinds
    assert "outside" not in table["plain"].value_scope.pools
    assert "outside" not in BACKENDS["plain"].pool_kinds  # the registry's table is untouched
