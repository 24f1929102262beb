"""The builtin pools model SGLang's quirks: checked against plain torch, independently."""

from __future__ import annotations

import pytest
import torch

from pools.builtin.eras import ERAS
from pools.builtin.sut import builtin_module

LAYER = type("Layer", (), {"layer_id": 0})()


def mha(era: str, engine: str, dtype=torch.bfloat16, page_size: int = 16):
    module = builtin_module(era, engine)
    return module, module.MHATokenToKVPool(
        size=64,
        page_size=page_size,
        dtype=dtype,
        head_num=2,
        head_dim=8,
        layer_num=1,
        device="cpu",
        enable_memory_saver=False,
    )


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("engine", ["reference", "torch"])
@pytest.mark.parametrize("page_size", [1, 16, 64])
def test_mha_write_lands_at_loc(era, engine, page_size):
    module, pool = mha(era, engine, page_size=page_size)
    assert pool.k_buffer[0].shape == (64 + page_size, 2, 8)
    loc = torch.tensor([1, 5, 64 + page_size - 1])
    k, v = torch.randn(3, 2, 8).bfloat16(), torch.randn(3, 2, 8).bfloat16()
    pool.set_kv_buffer(LAYER, loc if era in ("legacy", "kwarg") else module.KVWriteLoc(loc), k, v)
    assert torch.equal(pool.get_key_buffer(0)[loc], k)
    assert torch.equal(pool.get_value_buffer(0)[loc], v)
    untouched = torch.ones(64 + page_size, dtype=torch.bool)
    untouched[loc] = False
    assert not pool.get_key_buffer(0)[untouched].any()


@pytest.mark.parametrize("engine", ["reference", "torch"])
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_stored_as_uint8_and_caller_divided_in_place(engine, fp8):
    _, pool = mha("legacy", engine, dtype=fp8)
    assert pool.k_buffer[0].dtype == torch.uint8
    k = torch.randn(4, 2, 8).bfloat16()
    v = torch.randn(4, 2, 8).bfloat16()
    k_before, v_before = k.clone(), v.clone()
    pool.set_kv_buffer(LAYER, torch.tensor([2, 3, 4, 5]), k, v, 0.5, 2.0)
    # SGLang divides the caller's tensors in place in their own dtype, then casts.
    assert torch.equal(k, k_before.div_(0.5))
    assert torch.equal(v, v_before.div_(2.0))
    assert torch.equal(pool.k_buffer[0][2:6], k.to(fp8).view(torch.uint8))
    assert pool.get_key_buffer(0).dtype == fp8


def test_no_division_when_input_dtype_matches_pool():
    _, pool = mha("legacy", "torch")
    k = torch.randn(2, 2, 8).bfloat16()
    kept = k.clone()
    pool.set_kv_buffer(LAYER, torch.tensor([1, 2]), k, k.clone(), 4.0, 4.0)
    assert torch.equal(k, kept)
    assert torch.equal(pool.k_buffer[0][1:3], kept)


@pytest.mark.parametrize("era", list(ERAS))
def test_mla_ignores_scales_and_cache_v(era):
    module = builtin_module(era, "torch")
    pool = module.MLATokenToKVPool(
        size=32,
        page_size=1,
        dtype=torch.bfloat16,
        kv_lora_rank=8,
        qk_rope_head_dim=4,
        layer_num=1,
        device="cpu",
        enable_memory_saver=False,
    )
    with pytest.raises(TypeError):
        pool.set_kv_buffer(LAYER, torch.tensor([1]), torch.zeros(1, 1, 12), None, 2.0, 2.0)
    loc = torch.tensor([3, 4])
    arg = loc if era in ("legacy", "kwarg") else module.KVWriteLoc(loc)
    k = torch.randn(2, 1, 12)
    pool.set_kv_buffer(LAYER, arg, k, "cache_v is ignored")
    assert torch.equal(pool.kv_buffer[0][loc], k.bfloat16())
    nope, rope = torch.randn(2, 1, 8).bfloat16(), torch.randn(2, 1, 4).bfloat16()
    pool.set_mla_kv_buffer(LAYER, arg, nope, rope)
    assert torch.equal(pool.kv_buffer[0][loc], torch.cat([nope, rope], -1))
    pool.set_mla_kv_buffer(LAYER, arg, nope, None)
    assert torch.equal(pool.kv_buffer[0][loc][..., :8], nope)


def swa(era: str):
    module = builtin_module(era, "torch")
    pool = module.SWAKVPool(
        size=32,
        size_swa=16,
        page_size=1,
        dtype=torch.float8_e4m3fn,
        head_num=1,
        head_dim=4,
        swa_attention_layer_ids=[1],
        full_attention_layer_ids=[0],
        device="cpu",
    )
    mapping = torch.zeros(34, dtype=torch.int64)
    mapping[5], mapping[6] = 9, 10
    mapping[-1] = -1
    pool.register_mapping(mapping)
    return module, pool


@pytest.mark.parametrize("era", list(ERAS))
def test_swa_routes_swa_layers_to_translated_slots_with_default_scale_one(era):
    module, pool = swa(era)
    swa_layer = type("Layer", (), {"layer_id": 1})()
    loc = torch.tensor([5, 6])
    k = torch.full((2, 1, 4), 3.0, dtype=torch.bfloat16)
    swa_loc = pool.translate_loc_from_full_to_swa(loc)
    if era == "legacy":
        pool.set_kv_buffer(swa_layer, loc, k, k.clone())
    elif era == "kwarg":
        pool.set_kv_buffer(swa_layer, loc, k, k.clone(), swa_loc=swa_loc)
    else:
        pool.set_kv_buffer(swa_layer, module.KVWriteLoc(loc, swa_loc), k, k.clone())
    # Default scale 1.0 (not None): the bf16 input is "divided" by 1.0, values unchanged.
    assert torch.equal(pool.get_key_buffer(1)[[9, 10]].float(), k.float())
    assert not pool.get_key_buffer(0).float().any()


@pytest.mark.parametrize("era", ["kwarg", "bundled", "current"])
def test_swa_asserts_swa_loc_after_legacy(era):
    module, pool = swa(era)
    swa_layer = type("Layer", (), {"layer_id": 1})()
    loc = torch.tensor([5])
    arg = loc if era == "kwarg" else module.KVWriteLoc(loc)
    with pytest.raises(AssertionError):
        pool.set_kv_buffer(swa_layer, arg, torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))


def test_current_kvwriteloc_cuts_to_loc_length_and_marks_batches():
    module = builtin_module("current", "torch")
    loc, padded = torch.arange(3), torch.arange(8)
    write_loc = module.KVWriteLoc(loc, swa_loc=padded, full_loc=padded)
    assert write_loc.swa_loc.shape[0] == 3 and write_loc.full_loc.shape[0] == 3
    batch = type(
        "Batch",
        (),
        {"out_cache_loc": loc, "physical": True, "encoder_out_cache_loc": padded},
    )()
    cross = type("Layer", (), {"is_cross_attention": True})()
    plain = type("Layer", (), {"is_cross_attention": False})()
    assert module.KVWriteLoc.for_layer(batch, plain).physical
    cross_loc = module.KVWriteLoc.for_layer(batch, cross)
    assert cross_loc.loc is padded and not cross_loc.physical
    assert module.unwrap_write_loc(loc) == (loc, None, None)


def test_bundled_kvwriteloc_does_not_cut():
    module = builtin_module("bundled", "torch")
    write_loc = module.KVWriteLoc(torch.arange(3), torch.arange(8))
    assert write_loc.swa_loc.shape[0] == 8
    assert len(module.unwrap_write_loc(write_loc)) == 2
