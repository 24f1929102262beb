"""The backends for 0.5.12-0.5.14's last unclaimed write files: dual_chunk, cutlass_mla,
tokenspeed_mla, and dsa's 0.5.12 file name (nsa_backend.py). What each call site hands the pool
per era, which run as release code, and that each release's census matches their models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from backends.registry import BACKENDS
from harness.sut.load.environments import cache_root
from harness.sut.probe.census import census
from harness.sut.probe.census_call_sites import BACKEND_MODELS
from harness.sut.probe.census_compare import (
    branch_mismatches,
    compare,
    files_present,
    unmodelled_files,
)
from tests.test_backends_doors import calls_of

OLD_ERAS = ("legacy", "kwarg", "bundled")
NEW = ("dual_chunk", "cutlass_mla", "tokenspeed_mla")
# The release each era was derived from (docs/backends.md), and the constructors it lacks.
RELEASES = {"0.5.12": "legacy", "0.5.13": "kwarg", "0.5.14": "bundled", "0.5.23": "current"}
BEFORE_CONSTRUCTORS = frozenset({"for_layer", "for_batch"})
DUAL_CHUNK = "sglang/srt/layers/attention/dual_chunk_flashattention_backend.py"


def release_root(version: str) -> Path:
    root = cache_root() / f"sglang-{version}"
    if not (root / "sglang").is_dir():
        pytest.skip(
            f"sglang=={version} is not in the release cache (kvh sut install sglang=={version})"
        )
    return root


@pytest.mark.parametrize("era", OLD_ERAS)
@pytest.mark.parametrize("mode", ["extend", "decode"])
def test_dual_chunk_passes_the_bare_loc_and_the_layer_scales(era, mode):
    calls = calls_of("dual_chunk", mode, era, "mha", "scaled")
    assert {call.method for call in calls} == {"set_kv_buffer"}
    assert all(isinstance(call.args[0], torch.Tensor) for call in calls)  # never a KVWriteLoc
    assert all(len(call.args) == 5 and not call.kwargs for call in calls)  # loc, k, v, scales


@pytest.mark.parametrize("era", OLD_ERAS)
@pytest.mark.parametrize("mode", ["extend", "decode"])
@pytest.mark.parametrize(
    "new, parent", [("cutlass_mla", "flashinfer_mla"), ("tokenspeed_mla", "trtllm_mla")]
)
def test_the_mla_subclasses_write_as_the_backend_they_inherit_from(era, mode, new, parent):
    mine = calls_of(new, mode, era, "mla", "plain")
    theirs = calls_of(parent, mode, era, "mla", "plain")
    assert [c.method for c in mine] == [c.method for c in theirs] == ["set_mla_kv_buffer"] * 2
    assert all(isinstance(c.args[0], torch.Tensor) for c in mine)  # the bare loc before 0.5.23


def test_each_serves_only_the_eras_whose_release_has_its_file():
    for name in NEW:
        entry = BACKENDS[name]
        assert entry.eras == OLD_ERAS, name
        assert set(entry.census.eras) <= set(OLD_ERAS), name
    assert BACKENDS["tokenspeed_mla"].skips == BACKENDS["trtllm_mla"].skips
    assert "prepare_prefill_qkv" in BACKENDS["tokenspeed_mla"].census.unmodelled_functions


def test_each_runs_as_release_code_or_says_why_not():
    assert BACKENDS["cutlass_mla"].real_code.cls == "CutlassMLABackend"
    assert BACKENDS["tokenspeed_mla"].real_code.cls == "TokenspeedMLABackend"
    dual = BACKENDS["dual_chunk"]
    assert dual.real_code is None and "five query parts" in dual.real_code_gap


def test_dsa_claims_its_0_5_12_file_name():
    assert "sglang/srt/layers/attention/nsa_backend.py" in BACKENDS["dsa"].census.files


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_every_write_file_of_the_release_is_claimed_and_the_new_models_match(version):
    root, era = release_root(version), RELEASES[version]
    release = census(root)
    assert unmodelled_files(release) == []
    missing = BEFORE_CONSTRUCTORS if era != "current" else frozenset()
    for name in (*NEW, "dsa"):
        model = BACKEND_MODELS[name]
        if not files_present(model, release):
            assert era == "current" and name in NEW  # the three files are gone by 0.5.23
            continue
        assert compare(release, model, era, missing) == [], (version, name)
        assert branch_mismatches(release, model, era) == [], (version, name)


def test_a_changed_branch_around_dual_chunks_write_is_reported(tmp_path):
    source = release_root("0.5.14") / DUAL_CHUNK
    copy = tmp_path / DUAL_CHUNK
    copy.parent.mkdir(parents=True)
    text = source.read_text()
    assert text.count("            if save_kv_cache:\n                self.token_to_kv_pool") == 2
    changed = text.replace(
        "            if save_kv_cache:\n                self.token_to_kv_pool",
        "            if save_kv_cache or layer.is_cross_attention:\n"
        "                self.token_to_kv_pool",
        1,
    )
    copy.write_text(changed)
    shutil.copy(source.parent / "base_attn_backend.py", copy.parent / "base_attn_backend.py")
    found = branch_mismatches(census(tmp_path), BACKEND_MODELS["dual_chunk"], "bundled")
    described = [m.describe() for m in found]
    assert any("save_kv_cache or layer.is_cross_attention" in line for line in described)
    assert any("no call under" in line and "forward_extend" in line for line in described)
