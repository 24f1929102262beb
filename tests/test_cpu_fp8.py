"""A CPU server's fp8_e4m3 cache (the mha_cpu_fp8 kind): SGLang 0.5.23 builds its
MHATokenToKVPool with CPUFP8KVCacheMethod there, and the door's quantized path divides copies of
k and v (1.0 where a scale is None), never the caller's. The door campaign's 2 survivors of that
path (memory_pool.py 2912-2924) were a gap: kvh built no pool with a quant method."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from backends.registry import backend_named
from harness.run.bisect import probe_of
from harness.run.release_copy import release_folder, sparse_copy
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from scenarios.defaults import default_scenarios

KIND = "mha_cpu_fp8"


@pytest.mark.parametrize("module", [judge_module("current"), builtin_module("current", "torch")],
                         ids=["judge", "builtin"])  # fmt: skip
def test_a_write_divides_copies_and_leaves_the_caller_s_tensors(module) -> None:
    pool = module.MHATokenToKVPoolCPUFP8(
        size=4, page_size=1, dtype=torch.float8_e4m3fn, head_num=1, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    layer = type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()
    k, v = torch.full((2, 1, 16), 3.0), torch.full((2, 1, 16), 5.0)
    pool.set_kv_buffer(layer, module.KVWriteLoc(torch.tensor([1, 2]), physical=True), k, v, 2.0)
    assert (pool.get_key_buffer(0)[1:3].float() == 1.5).all()
    assert (pool.get_value_buffer(0)[1:3].float() == 5.0).all()  # v_scale None: 1.0
    assert (k == 3.0).all() and (v == 5.0).all()


@pytest.mark.sglang
def test_the_release_s_quantized_path_is_judged_and_a_fault_in_it_is_a_finding(tmp_path: Path):
    """Through plain on 0.5.23's own pool; a copy whose quantized branch raises on every write
    (the campaign's `if dcp_kv_mask is None:` survivor) is a finding."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    plain = backend_named("plain")
    scaled = next(s for s in default_scenarios(KIND, "fp8_e4m3", 0) if s.name == "scaled-float")
    assert not probe_of("sglang", scaled, plain, "extend").finding
    pool = Path("sglang/srt/mem_cache/memory_pool.py")
    copy = sparse_copy(release_folder("sglang"), tmp_path / "release", [pool], with_siblings=False)
    text = (copy / pool).read_text()
    guard = "    if self.is_quantized_kv_cache:\n            if dcp_kv_mask is not None:"
    assert text.count(guard) == 1
    (copy / pool).unlink()
    (copy / pool).write_text(text.replace(guard, guard.replace("is not None", "is None")))
    assert probe_of(f"sglang@{copy}", scaled, plain, "extend").finding
