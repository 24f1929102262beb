"""triton on the unified SWA kind: its 0.5.23 call omits the scales when both are None, so
UnifiedSWAKVPool.set_kv_buffer's defaults (1.0) divide on a cast, which no other call site
reaches (the door campaign's 4 survivors of those defaults). On a release its cells run the
call-site model on the release's pool: the release's class reads the window loc from the
pool's allocators, which kvh does not build."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from backends.registry import backend_named
from harness.run.bisect import probe_of
from harness.run.release_copy import release_folder, sparse_copy
from scenarios.defaults import default_scenarios


def test_triton_writes_the_kind_through_its_model_and_says_why() -> None:
    real = backend_named("triton").real_code
    assert "swa_unified" in backend_named("triton").pool_kinds
    assert not real.runs_in("extend", "swa_unified") and real.runs_in("extend", "mha")
    assert "attach_allocators" in real.why_model


@pytest.mark.sglang
def test_a_release_whose_default_scale_is_not_one_is_a_finding(tmp_path: Path) -> None:
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    triton = backend_named("triton")
    unscaled = next(
        s for s in default_scenarios("swa_unified", "fp8_e4m3", 0) if s.name == "small-narrowed"
    )
    assert not probe_of("sglang", unscaled, triton, "extend").finding
    pool = Path("sglang/srt/mem_cache/unified_memory_pool.py")
    copy = sparse_copy(release_folder("sglang"), tmp_path / "release", [pool], with_siblings=False)
    text = (copy / pool).read_text()
    default = "        k_scale: float = 1.0,"
    at = text.index(default, text.index("class UnifiedSWAKVPool"))
    (copy / pool).unlink()
    (copy / pool).write_text(text[:at] + default.replace("1.0", "2.0") + text[at + len(default) :])
    assert probe_of(f"sglang@{copy}", unscaled, triton, "extend").finding
