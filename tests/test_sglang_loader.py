"""The real sglang pools, loaded on CPU, put the exact bytes at the expected rows.

Expected buffers are computed with plain torch indexing on a snapshot, never by
sglang, and whole buffers are compared byte for byte, so a write that lands on
a wrong row, a wrong layer or a wrong sub-pool fails as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import pytest
import torch

from harness.sut.load.sglang_loader import INSTALL_HINT, SutLoadError, load_sglang


def _load() -> tuple[types.SimpleNamespace | None, str]:
    try:
        return load_sglang(), ""
    except SutLoadError as exc:
        return None, str(exc)


SGL, LOAD_ERROR = _load()
INSTALLED = not LOAD_ERROR.startswith("sglang not installed")
SKIP_REASON = (
    f"sglang did not load: {LOAD_ERROR}" if INSTALLED else f"sglang not installed: {INSTALL_HINT}"
)


# Drives the installed sglang package: marked `sglang`, and
# a skip with the reason where it did not load.
def needs_sglang(test):
    return pytest.mark.sglang(pytest.mark.skipif(SGL is None, reason=SKIP_REASON)(test))


LOC = torch.tensor(
    [5, 17, 2, 40, 41, 9, 63, 30]
)  # unsorted, gapped, never slot 0 (the padding sink)
N = len(LOC)


def _layer(layer_id: int) -> types.SimpleNamespace:
    # All a pool reads from a layer; scales are passed explicitly, as backends do.
    return types.SimpleNamespace(
        layer_id=layer_id, is_cross_attention=False, k_scale=None, v_scale=None
    )


def _raw(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8)


def _assert_written(
    after: torch.Tensor, before: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor
) -> None:
    expected = _raw(before).clone()
    expected[loc] = _raw(rows)
    assert torch.equal(_raw(after), expected)


def _snapshot(buffers: list[torch.Tensor]) -> list[torch.Tensor]:
    return [b.clone() for b in buffers]


def _mha(dtype: torch.dtype) -> object:
    return SGL.MHATokenToKVPool(
        size=64,
        page_size=1,
        dtype=dtype,
        head_num=2,
        head_dim=16,
        layer_num=2,
        device="cpu",
        enable_memory_saver=False,
    )


def test_load_error_is_one_line_for_a_bad_prefix() -> None:
    with pytest.raises(SutLoadError, match=r"^sys_path_prefix .* is not a directory$"):
        load_sglang(sys_path_prefix="/nonexistent/kvwrite-sglang")


def test_load_error_names_sglang_when_absent() -> None:
    # A fresh process where no finder can see sglang, as on a machine without it.
    code = textwrap.dedent("""
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "sglang":
                    raise ModuleNotFoundError(name, name=name)
        sys.meta_path.insert(0, Hide())
        from harness.sut.load.sglang_loader import SutLoadError, load_sglang
        try:
            load_sglang()
        except SutLoadError as exc:
            print(exc)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=60
    )
    assert "sglang" in out.stdout and len(out.stdout.strip().splitlines()) == 1, out.stderr[-2000:]


@pytest.mark.sglang
@pytest.mark.skipif(not INSTALLED, reason=SKIP_REASON)
def test_installed_sglang_loads() -> None:
    assert SGL is not None, LOAD_ERROR  # installed but broken is a failure, not a skip


@needs_sglang
def test_the_release_quantiser_stays_compiled_as_eager_bf16_rounds_otherwise() -> None:
    """Eager bf16 arithmetic in the release's compiled FP4 quantiser (log2 of block_max / 6 in
    bf16) moves block scales that the compiled kernel computes in fp32, so the loader keeps it
    compiled past torch's default of 8 recompiles (a run's dtypes and layouts exceed that)."""
    from sglang.srt.layers.quantization.kvfp4_tensor import FP4MXBlock16KVQuantizeUtil
    from torch._dynamo import config

    from harness.sut.load.sglang_loader import RELEASE_RECOMPILE_LIMIT

    quantize = FP4MXBlock16KVQuantizeUtil.batched_quantize
    values = torch.randn(512, 1, 64, generator=torch.Generator().manual_seed(0)) * 64
    values = values.to(torch.bfloat16)
    _, compiled = quantize(values)
    _, eager = quantize._torchdynamo_orig_callable(values)
    assert (compiled != eager).any()
    assert getattr(config, "recompile_limit", 0) >= RELEASE_RECOMPILE_LIMIT


@needs_sglang
def test_namespace() -> None:
    assert SGL.name == "sglang" and SGL.version
    assert "torchvision" in SGL.stood_in and "sglang.srt.model_executor.runner" in SGL.stood_in
    for cls in ("MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool"):
        assert isinstance(getattr(SGL, cls), type)


@needs_sglang
def test_mha_bf16_rows() -> None:
    pool = _mha(torch.bfloat16)
    k = torch.randn(N, 2, 16, dtype=torch.bfloat16)
    v = torch.randn(N, 2, 16, dtype=torch.bfloat16)
    before = _snapshot([pool.k_buffer[0], pool.k_buffer[1], pool.v_buffer[1]])
    pool.set_kv_buffer(_layer(1), LOC, k, v)
    assert torch.equal(_raw(pool.k_buffer[0]), _raw(before[0]))  # other layer untouched
    _assert_written(pool.k_buffer[1], before[1], LOC, k)
    _assert_written(pool.v_buffer[1], before[2], LOC, v)


@needs_sglang
def test_mha_fp8_scaled_divides_callers_k_in_place() -> None:
    pool = _mha(torch.float8_e4m3fn)
    k0 = torch.randn(N, 2, 16, dtype=torch.bfloat16) * 4
    v0 = torch.randn(N, 2, 16, dtype=torch.bfloat16) * 4
    k, v = k0.clone(), v0.clone()
    before = _snapshot([pool.k_buffer[0], pool.v_buffer[0]])
    pool.set_kv_buffer(_layer(0), LOC, k, v, 3.0, 0.7)
    k_div, v_div = k0.clone().div_(3.0), v0.clone().div_(0.7)  # division happens in the input dtype
    assert torch.equal(k, k_div) and torch.equal(v, v_div), "the caller's k/v are divided in place"
    _assert_written(pool.k_buffer[0], before[0], LOC, k_div.to(torch.float8_e4m3fn))
    _assert_written(pool.v_buffer[0], before[1], LOC, v_div.to(torch.float8_e4m3fn))


def _mla_pool_and_loc(wrap: bool) -> tuple[object, object]:
    if wrap and not hasattr(SGL, "KVWriteLoc"):
        pytest.skip(f"sglang {SGL.version} has no KVWriteLoc")
    pool = SGL.MLATokenToKVPool(
        size=64,
        page_size=1,
        dtype=torch.bfloat16,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        layer_num=2,
        device="cpu",
        enable_memory_saver=False,
    )
    return pool, (SGL.KVWriteLoc(LOC) if wrap else LOC)


WRAPS = pytest.mark.parametrize("wrap", [False, True], ids=["bare_loc", "KVWriteLoc"])


@needs_sglang
@WRAPS
def test_mla_set_kv_buffer_rows(wrap: bool) -> None:
    pool, loc = _mla_pool_and_loc(wrap)
    whole = torch.randn(N, 1, 24, dtype=torch.bfloat16)
    before = _snapshot([pool.kv_buffer[0], pool.kv_buffer[1]])
    pool.set_kv_buffer(
        _layer(1), loc, whole, torch.zeros(N, 1, 16, dtype=torch.bfloat16)
    )  # cache_v is ignored
    assert torch.equal(_raw(pool.kv_buffer[0]), _raw(before[0]))
    _assert_written(pool.kv_buffer[1], before[1], LOC, whole)


@needs_sglang
@WRAPS
def test_mla_set_mla_kv_buffer_rows(wrap: bool) -> None:
    pool, loc = _mla_pool_and_loc(wrap)
    nope = torch.randn(N, 1, 16, dtype=torch.bfloat16)
    rope = torch.randn(N, 1, 8, dtype=torch.bfloat16)
    before = pool.kv_buffer[0].clone()
    pool.set_mla_kv_buffer(_layer(0), loc, nope, rope)
    _assert_written(pool.kv_buffer[0], before, LOC, torch.cat([nope, rope], dim=-1))


def _mapping(size: int, size_swa: int) -> torch.Tensor:
    # size + page_size entries then a trailing -1; each written full slot gets a distinct SWA slot.
    mapping = torch.zeros(size + 2, dtype=torch.int64)
    mapping[LOC] = torch.randperm(size_swa - 1)[:N] + 1
    mapping[-1] = -1
    return mapping


def _swa_write_loc(mapping: torch.Tensor) -> object:
    if hasattr(SGL, "KVWriteLoc"):
        return SGL.KVWriteLoc(LOC, mapping[LOC])
    pytest.skip(f"sglang {SGL.version} predates KVWriteLoc")


@needs_sglang
def test_swa_over_mha_rows() -> None:
    pool = SGL.SWAKVPool(
        size=64,
        size_swa=32,
        page_size=1,
        dtype=torch.bfloat16,
        head_num=2,
        head_dim=16,
        swa_attention_layer_ids=[1],
        full_attention_layer_ids=[0, 2],
        device="cpu",
    )
    mapping = _mapping(64, 32)
    pool.register_mapping(mapping)
    loc = _swa_write_loc(mapping)
    k, v = torch.randn(2, N, 2, 16, dtype=torch.bfloat16)
    swa_before = _snapshot([pool.swa_kv_pool.k_buffer[0], pool.swa_kv_pool.v_buffer[0]])
    full_before = _snapshot([pool.full_kv_pool.k_buffer[0], pool.full_kv_pool.k_buffer[1]])
    pool.set_kv_buffer(_layer(1), loc, k, v)  # SWA layer: lands at the translated slots
    _assert_written(pool.swa_kv_pool.k_buffer[0], swa_before[0], mapping[LOC], k)
    _assert_written(pool.swa_kv_pool.v_buffer[0], swa_before[1], mapping[LOC], v)
    pool.set_kv_buffer(_layer(2), loc, v, k)  # full layer 2 is the full pool's local layer 1
    assert torch.equal(_raw(pool.full_kv_pool.k_buffer[0]), _raw(full_before[0]))
    _assert_written(pool.full_kv_pool.k_buffer[1], full_before[1], LOC, v)


@needs_sglang
def test_swa_over_mla_rows() -> None:
    if not SGL.swa_mla:
        pytest.skip(f"sglang {SGL.version}: SWAKVPool takes no MLA sub-pools")
    mla = {
        "kv_lora_rank": 16,
        "qk_rope_head_dim": 8,
        "page_size": 1,
        "device": "cpu",
        "enable_memory_saver": False,
    }
    pool = SGL.SWAKVPool(
        size=64,
        size_swa=32,
        page_size=1,
        dtype=torch.bfloat16,
        head_num=1,
        head_dim=24,
        swa_attention_layer_ids=[0],
        full_attention_layer_ids=[1],
        device="cpu",
        token_to_kv_pool_class=SGL.MLATokenToKVPool,
        full_kv_pool_kwargs=mla,
        swa_kv_pool_kwargs=mla,
    )
    mapping = _mapping(64, 32)
    pool.register_mapping(mapping)
    loc = _swa_write_loc(mapping)
    nope = torch.randn(N, 1, 16, dtype=torch.bfloat16)
    rope = torch.randn(N, 1, 8, dtype=torch.bfloat16)
    swa_before, full_before = (
        pool.swa_kv_pool.kv_buffer[0].clone(),
        pool.full_kv_pool.kv_buffer[0].clone(),
    )
    pool.set_mla_kv_buffer(_layer(0), loc, nope, rope)
    _assert_written(
        pool.swa_kv_pool.kv_buffer[0], swa_before, mapping[LOC], torch.cat([nope, rope], -1)
    )
    whole = torch.randn(N, 1, 24, dtype=torch.bfloat16)
    pool.set_kv_buffer(_layer(1), loc, whole, whole)
    _assert_written(pool.full_kv_pool.kv_buffer[0], full_before, LOC, whole)


@pytest.mark.slow
@needs_sglang
def test_loads_without_triton() -> None:
    # A machine without triton: the stand-in must carry sglang's import and the MHA write.
    code = textwrap.dedent("""
        import importlib.abc, sys, types, torch
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "triton":
                    raise ModuleNotFoundError(name, name=name)
        sys.meta_path.insert(0, Hide())
        from harness.sut.load.sglang_loader import load_sglang
        ns = load_sglang()
        assert "triton" in ns.stood_in
        pool = ns.MHATokenToKVPool(size=8, page_size=1, dtype=torch.bfloat16, head_num=1,
                                   head_dim=4, layer_num=1, device="cpu", enable_memory_saver=False)
        k = torch.ones(2, 1, 4, dtype=torch.bfloat16)
        pool.set_kv_buffer(types.SimpleNamespace(layer_id=0), torch.tensor([1, 2]), k, k)
        assert torch.equal(pool.k_buffer[0][1:3], k)
        print("OK")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=120
    )
    assert "OK" in out.stdout, out.stderr[-3000:]
