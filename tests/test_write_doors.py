"""The write-door census (harness/sut/probe/write_doors.py): every method of a release's pools that
writes the cache, read from its source, driven through a pool kind or not, with the reason."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from harness.sut.load.optional_pools import offered_classes
from harness.sut.probe.detect import REQUIRED_NAMES
from harness.sut.probe.write_doors import counts, cpu_count, driven_count, write_doors


def _release(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "sglang" / "srt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_a_door_a_later_release_adds_is_listed_without_a_code_change(tmp_path):
    root = _release(
        tmp_path,
        {
            "mem_cache/memory_pool.py": """
                class KVCache:
                    def set_kv_buffer(self, layer, loc, k, v):
                        raise NotImplementedError()

                class MHATokenToKVPool(KVCache):
                    def set_kv_buffer(self, layer, loc, k, v):
                        self.k[loc] = k

                    def set_dp_buffer_len(self, n):
                        self.n = n
            """,
            "mem_cache/future_pool.py": """
                class FuturePool:
                    def set_latent_cache_buffer(self, layer, loc, latent):
                        self.buffer[loc] = latent
            """,
        },
    )
    doors = {(d.cls, d.method): d for d in write_doors(root, REQUIRED_NAMES)}
    # The abstract interface and a size setter are no doors.
    assert set(doors) == {
        ("MHATokenToKVPool", "set_kv_buffer"),
        ("FuturePool", "set_latent_cache_buffer"),
    }
    assert doors["MHATokenToKVPool", "set_kv_buffer"].driven_by == ("mha",)
    future = doors["FuturePool", "set_latent_cache_buffer"]
    assert not future.driven_by and future.reason.startswith("not modelled yet")
    assert not future.constructs_here  # nothing measured it
    assert "future_pool.py:3" in future.describe()
    assert driven_count(list(doors.values())) == "write doors driven: 1 of 2"


def test_the_installed_release_lists_every_door_driven_or_with_its_reason():
    spec = importlib.util.find_spec("sglang")
    if spec is None:
        pytest.skip("sglang is not installed (requirements/sglang-cpu.txt, README)")
    root = Path(list(spec.submodule_search_locations)[0]).parent
    doors = write_doors(root, REQUIRED_NAMES)
    driven = {(d.cls, d.method) for d in doors if d.driven_by}
    assert {
        ("MHATokenToKVPool", "set_kv_buffer"),
        ("MLATokenToKVPool", "set_mla_kv_buffer"),
        ("SWAKVPool", "set_kv_buffer"),
    } <= driven
    assert all(d.driven_by or d.reason for d in doors)
    unified = next(d for d in doors if (d.cls, d.method) == ("UnifiedSWAKVPool", "set_kv_buffer"))
    assert "physical" in unified.reason
    # With only the protocol's three offered, a kind's class the loader would offer is not driven,
    # and its measured status says why it still could be (a Triton store, interpreted here).
    mla_fp4 = next(d for d in doors if d.cls == "MLATokenToKVPoolFP4")
    assert not mla_fp4.driven_by and "TRITON_INTERPRET=1" in mla_fp4.reason
    dspark = next(d for d in doors if d.method == "set_kv_buffer_prefix_valid")
    assert dspark.driven_by == ("mha",)  # the draft commit the dspark call site makes


def test_the_loaders_optional_pools_drive_the_doors_they_define_or_inherit():
    spec = importlib.util.find_spec("sglang")
    if spec is None:
        pytest.skip("sglang is not installed (requirements/sglang-cpu.txt, README)")
    root = Path(list(spec.submodule_search_locations)[0]).parent
    offered = offered_classes(root)
    assert {"MHATokenToKVPoolFP4", "UnifiedMHATokenToKVPool"} <= set(offered)
    doors = {(d.cls, d.method): d for d in write_doors(root, offered)}
    assert doors["MHATokenToKVPoolFP4", "set_kv_buffer"].driven_by == ("mha_fp4",)
    # UnifiedMHATokenToKVPool defines no door: it runs the one it inherits.
    assert "unified_mha" in doors["MHATokenToKVPool", "set_kv_buffer"].driven_by
    # plain writes the HiSparse DSA pool through set_kv_buffer, the dsa call site through
    # set_mla_kv_buffer; the dots3 model writes the SWA pool's indexer door (swa_dsa).
    assert doors["HiSparseDSATokenToKVPool", "set_kv_buffer"].driven_by == ("hisparse_dsa",)
    assert doors["UnifiedSWAKVPool", "set_kv_buffer"].driven_by == ("swa_unified",)
    assert doors["UnifiedDraftSWAKVPool", "set_kv_buffer"].driven_by == ("swa_unified_draft",)
    assert doors["PageInterleaveDSATokenToKVPool", "set_kv_buffer"].driven_by == (
        "page_interleave_dsa",
    )
    assert doors["LayerSplitDSATokenToKVPool", "set_mla_kv_buffer"].driven_by == (
        "layer_split_dsa",
    )
    assert doors["HybridLinearKVPool", "set_index_k_scale_buffer"].driven_by == (
        "hybrid_linear_dsa",
    )
    assert doors["SWAKVPool", "set_index_k_scale_buffer"].driven_by == ("swa_dsa",)
    assert doors["MHATokenToKOnlyPool", "set_k_buffer"].driven_by == ("minimax_sparse",)
    # The V4 indexer pool's key door alone (its K/V doors raise); the V4 pool that routes to it
    # does not construct on a CPU.
    assert doors["DeepSeekV4IndexerPool", "set_index_k_scale_buffer"].driven_by == ("dsv4_indexer",)
    route = doors["DeepSeekV4TokenToKVPool", "set_index_k_scale_buffer"]
    assert not route.driven_by and "does not construct on a CPU" in route.reason
    # The DeepSeek V4 pools: the pack's store, the HiSparse C4 pool's own door over it, the
    # uniform-FP8 rows; the single pool's fused store needs a CUDA JIT build and is not driven.
    assert doors["DeepSeekV4SingleKVPool", "set_key_buffer"].driven_by == ("dsv4",)
    assert doors["HiSparseC4DevicePool", "set_key_buffer"].driven_by == ("dsv4_hisparse_c4",)
    assert doors["DeepSeekV4UniformFP8KVPool", "set_key_buffer_fused"].driven_by == (
        "dsv4_uniform_fp8",
    )
    fused = doors["DeepSeekV4SingleKVPool", "set_key_buffer_fused"]
    assert not fused.driven_by and "no modelled call site calls this door" in fused.reason
    # The MiniMax M3 NVFP4 sub-pools' byte copies are driven (a retracted request's restore);
    # their quantising doors and the composite's stay measured as needing a GPU.
    for cls, door in (
        ("MiniMaxM3Nvfp4MainKVPool", "set_quantized_kv_buffer"),
        ("MiniMaxM3Nvfp4IndexKPool", "set_quantized_k_buffer"),
    ):
        assert doors[cls, door].driven_by == ("minimax_m3_nvfp4",)
    for cls, door in (
        ("MiniMaxM3Nvfp4MainKVPool", "set_kv_buffer"),
        ("MiniMaxM3Nvfp4KVPool", "set_fused_kv_index_buffer"),
    ):
        assert not doors[cls, door].driven_by and "SM90+" in doors[cls, door].reason
    line = cpu_count(list(doors.values()))
    assert line.startswith("of the ") and "whose class constructs on a CPU" in line


def test_the_summary_and_the_dashboard_say_how_many_doors_each_sut_drives(tmp_path, capsys):
    from harness.cli import main

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed (requirements/sglang-cpu.txt, README)")
    out = tmp_path / "results"
    arguments = ["--backend", "plain", "--pool", "mha", "--dtype", "bf16", "--out", str(out)]
    assert main(["run", "--sut", "sglang", *arguments]) == 0
    summary = (out / "summary.md").read_text()
    assert "## Systems under test" in summary
    root = Path(list(importlib.util.find_spec("sglang").submodule_search_locations)[0]).parent
    driven, total = counts(write_doors(root, offered_classes(root)))
    line = next(line for line in summary.splitlines() if line.startswith("- sglang: version"))
    assert "release code for: " in line and f"write doors driven: {driven} of {total}" in line
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "dashboard.html").read_text()
    assert '<table id="suts">' in html and f"{driven} of {total}" in html
    capsys.readouterr()
