"""The census of a release's write call sites, compared with the harness's call-site model."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from backends.registry import BACKENDS
from harness.cli.sut import check
from harness.exit_codes import UsageError
from harness.sut.probe.census import census, census_file
from harness.sut.probe.census_call_sites import BACKEND_MODELS, Shape
from harness.sut.probe.census_compare import compare, files_present
from tests.conftest import SGLANG_INSTALL_HINT, installed_sglang_root

FA3 = "sglang/srt/layers/attention/flashattention_backend.py"
MEM_CACHE = ("sglang/srt/mem_cache/memory_pool.py", "sglang/srt/mem_cache/swa_memory_pool.py")


ROOT = installed_sglang_root()
needs_release = pytest.mark.skipif(ROOT is None, reason=SGLANG_INSTALL_HINT)


@pytest.fixture(scope="module")
def installed_census():
    return census(ROOT)


def test_the_census_models_are_the_entries_declarations_in_registry_order():
    declared = [name for name, entry in BACKENDS.items() if entry.census is not None]
    assert list(BACKEND_MODELS) == declared
    assert all(BACKEND_MODELS[name].sites is BACKENDS[name].census for name in declared)


@pytest.mark.sglang
@needs_release
@pytest.mark.parametrize("backend", list(BACKEND_MODELS))
def test_installed_release_matches_the_model_of_every_backend(installed_census, backend):
    model = BACKEND_MODELS[backend]
    present = files_present(model, installed_census)
    if "current" not in model.sites.eras:
        # The backend's module says its file is gone by the installed release: hold it to that.
        assert not present, f"{backend}: its model has no current-era call, yet its file is here"
        return
    assert present, f"{backend}: no file in the installed release"
    assert [m.describe() for m in compare(installed_census, model, "current")] == []


def _plant(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """A copy of the installed release's fa3 file (and its pool modules) with the first `old`
    replaced by `new`; returns the tree and the line of the edit."""
    for name in (FA3, *MEM_CACHE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    text = (tmp_path / FA3).read_text()
    at = text.index(old)
    (tmp_path / FA3).write_text(text[:at] + new + text[at + len(old) :])
    return tmp_path, text[:at].count("\n") + 1


@pytest.mark.sglang
@needs_release
def test_a_planted_bare_write_loc_is_reported_with_file_and_line(tmp_path):
    tree, edited = _plant(
        tmp_path, "KVWriteLoc.for_layer(forward_batch, layer)", "KVWriteLoc(forward_batch, layer)"
    )
    planted = census(tree)
    call = next(c for c in planted.calls[FA3] if "KVWriteLoc(forward_batch, layer" in c.expression)
    assert call.line <= edited <= call.line + 3
    mismatches = compare(planted, BACKEND_MODELS["fa3"], "current")
    assert [(m.file, m.line) for m in mismatches] == [(FA3, call.line)]
    assert "KVWriteLoc(forward_batch" in mismatches[0].expression
    assert "for_layer" in mismatches[0].expected


@pytest.mark.sglang
@needs_release
def test_kvh_sut_check_of_a_planted_tree_exits_1_naming_the_line(tmp_path, capsys):
    tree, _ = _plant(
        tmp_path, "KVWriteLoc.for_layer(forward_batch, layer)", "KVWriteLoc(forward_batch, layer)"
    )
    line = next(
        c.line for c in census(tree).calls[FA3] if "KVWriteLoc(forward_batch" in c.expression
    )
    assert check(str(tree)) == 1
    out = capsys.readouterr().out
    assert "era: current" in out
    assert f"{FA3}:{line}: " in out
    assert "triton: no file in this release" in out


@pytest.mark.sglang
@needs_release
def test_kvh_sut_check_of_the_installed_release_exits_0(capsys):
    assert check(str(ROOT)) == 0
    out = capsys.readouterr().out
    for name, model in BACKEND_MODELS.items():
        said = "model matches" if "current" in model.sites.eras else "no file in this release"
        assert f"{name}: {said}" in out


def test_kvh_sut_check_of_a_release_not_installed_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("KVH_CACHE", str(tmp_path))
    with pytest.raises(UsageError, match=r"kvh sut install sglang==0\.0\.1"):
        check("sglang==0.0.1")
    with pytest.raises(UsageError, match="no sglang package"):
        check(str(tmp_path))


def test_names_helpers_and_conditionals_are_followed(tmp_path):
    source = tmp_path / "backend.py"
    source.write_text(
        textwrap.dedent("""
        class Backend:
            def _set_kv_buffer(self, layer, loc_info, k, v, k_scale=None, v_scale=None):
                self.token_to_kv_pool.set_kv_buffer(layer, loc_info, k, v, k_scale, v_scale)

            def forward_extend(self, layer, forward_batch, k, v):
                cache_loc = (forward_batch.out_cache_loc if not layer.is_cross_attention
                             else forward_batch.encoder_out_cache_loc)
                k_scale = k_descale if self.mx else layer.k_scale
                v_scale = v_descale if self.mx else layer.v_scale
                self.token_to_kv_pool.set_kv_buffer(
                    layer, KVWriteLoc(cache_loc, self.md.swa_out_cache_loc), k, v, k_scale, v_scale)
                self._set_kv_buffer(layer, KVWriteLoc.for_batch(forward_batch), k, v)
    """)
    )
    direct, helper = census_file(source, "backend.py")
    assert set(direct.variants) == {
        Shape("set_kv_buffer", "KVWriteLoc", "cache_loc", "swa_out_cache_loc", scales=s)
        for s in (("k_descale", "v_descale"), ("layer.k_scale", "layer.v_scale"))
    }
    assert helper.via == "_set_kv_buffer"
    assert helper.variants == (
        Shape("set_kv_buffer", "for_batch", "out_cache_loc", None, scales=("None", "None")),
    )


TRITON = "sglang/srt/layers/attention/triton_backend.py"


@pytest.mark.sglang
@needs_release
def test_a_renamed_write_helper_gives_the_same_census(installed_census, tmp_path):
    """A helper is known by what it does: the installed release's triton file with its write
    helper renamed is read as the same call sites (a rename once made its door a call site of
    its own, with a parameter for its loc, and skipped 16 cells)."""
    helper = next(call.via for call in installed_census.calls[TRITON] if call.via)
    renamed = (ROOT / TRITON).read_text().replace(helper, "_store_new_tokens")
    assert renamed != (ROOT / TRITON).read_text()
    copy = tmp_path / "triton_backend.py"
    copy.write_text(renamed)

    def shapes(calls):
        return [(call.function, call.variants, call.branch) for call in calls]

    assert shapes(census_file(copy, TRITON)) == shapes(installed_census.calls[TRITON])


def test_a_forward_path_that_reads_its_loc_off_the_batch_is_no_helper(tmp_path):
    source = tmp_path / "backend.py"
    source.write_text(
        textwrap.dedent("""
        class Backend:
            def _forward_paged(self, layer, forward_batch, k, v):
                self.token_to_kv_pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)

            def forward_decode(self, layer, forward_batch, k, v):
                return self._forward_paged(layer, forward_batch, k, v)
    """)
    )
    (call,) = census_file(source, "backend.py")
    assert (call.function, call.via) == ("Backend._forward_paged", "")
