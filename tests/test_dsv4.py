"""DeepSeek V4 main-KV pools (issue 27): DeepSeekV4SingleKVPool.set_key_buffer (the V4 pack's
Triton store), HiSparseC4DevicePool.set_key_buffer (the same at the HiSparse device slot) and
DeepSeekV4UniformFP8KVPool.set_key_buffer_fused (e4m3 rows). The judge and the builtin pools are
pinned against the installed release's own pools, byte for byte and refusal for refusal; the
call site's quantiser against the release's reference quantiser; and a store that forgets the
scale pad, a HiSparse store at the logical id and a uniform store into one layer are caught by
the default run."""

from __future__ import annotations

import importlib

import pytest
import torch

from backends.dsv4 import quantise_pack
from harness.cli import main
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from pools.kinds.slot_rows import dsv4_slot_rows
from tests.helpers.installed_release import release_offering

SIZE, PAGE = 128, 64
PAGES = 3  # ceil((128 + 64) / 64)
PAGE_BYTES = 65 * 576  # ceil(64 * 584 / 576) * 576
LOC = [1, 63, 64, 130]  # page 0 and its last slot, the first of page 1, page 2 offset 2
CLASSES = ("DeepSeekV4SingleKVPool", "HiSparseC4DevicePool", "DeepSeekV4UniformFP8KVPool")


def _latent(seed: int, tokens: int) -> torch.Tensor:
    rows = torch.randn(tokens, 1, 512, generator=torch.Generator().manual_seed(seed))
    return (rows * 3).to(torch.bfloat16)


def _pool(module, name: str):
    return getattr(module, name)(SIZE, PAGE, torch.float8_e4m3fn, 448, 64, 2, "cpu", False)


def _raises(call) -> str:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the refusal's class is what is compared
        return type(error).__name__
    return "nothing"


def _drive(module, name: str) -> dict:
    """Both layers' bytes after one write to layer 1, and what each refusal raised."""
    pool = _pool(module, name)
    loc = torch.tensor(LOC)
    seen: dict = {}
    if name == "HiSparseC4DevicePool":
        pack = quantise_pack(_latent(0, len(LOC)))
        seen["unregistered"] = _raises(lambda: pool.set_key_buffer(1, loc, pack))
        pool.register_mapping(torch.arange(SIZE + PAGE).roll(5))  # id s at device slot s - 5
    if name == "DeepSeekV4UniformFP8KVPool":
        latent = _latent(0, len(LOC)).reshape(len(LOC), 512)
        pool.set_key_buffer_fused(1, loc, latent)
        seen["pack"] = _raises(lambda: pool.set_key_buffer(1, loc, quantise_pack(_latent(0, 4))))
        seen["freqs"] = _raises(lambda: pool.set_key_buffer_fused(1, loc, latent, latent))
        seen["width"] = _raises(lambda: pool.set_key_buffer_fused(1, loc, latent[:, :448]))
        seen["past"] = _raises(lambda: pool.set_key_buffer_fused(1, loc + SIZE + PAGE, latent))
    else:
        pack = quantise_pack(_latent(0, len(LOC)))
        pool.set_key_buffer(1, loc.to(torch.int32), pack)
        seen["int16"] = _raises(lambda: pool.set_key_buffer(1, loc.to(torch.int16), pack))
        pack.k_rope_bf16 = pack.k_rope_bf16.float()
        seen["fp32 rope"] = _raises(lambda: pool.set_key_buffer(1, loc, pack))
    for layer_id in (0, 1):
        seen[f"L{layer_id}"] = pool.get_key_buffer(layer_id).view(torch.uint8).clone()
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("name", CLASSES)
def test_the_judge_and_builtin_pools_write_and_refuse_as_the_installed_release(name):
    release = _drive(release_offering(name), name)
    for module in (judge_module("current"), builtin_module("current", "torch")):
        other = _drive(module, name)
        assert release.keys() == other.keys()
        for key, value in release.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, other[key]), (module.name, key)
            else:
                assert value == other[key], (module.name, key)
    assert not release["L0"].any()  # layer 0 never written


@pytest.mark.sglang
def test_the_v4_store_puts_nope_rope_and_scales_at_their_page_offsets():
    release = _drive(release_offering("DeepSeekV4SingleKVPool"), "DeepSeekV4SingleKVPool")
    layer = release["L1"]
    assert layer.shape == (PAGES, PAGE_BYTES)
    pack = quantise_pack(_latent(0, len(LOC)))
    nope = pack.k_nope_fp8.view(torch.uint8)
    rope = pack.k_rope_bf16.view(torch.uint8)
    for token, slot in enumerate(LOC):
        page, offset = layer[slot // PAGE], slot % PAGE
        assert torch.equal(page[offset * 576 : offset * 576 + 448], nope[token])
        assert torch.equal(page[offset * 576 + 448 : offset * 576 + 576], rope[token])
        scales = PAGE * 576 + offset * 8
        assert torch.equal(page[scales : scales + 7], pack.scale_k_nope_ue8m0[token])
        assert page[scales + 7] == 0  # the scale pad is never written
    assert not layer[:, PAGE * 584 :].any()  # nor the page tail
    rows = dsv4_slot_rows(layer, PAGE)  # the harness's one row per slot
    assert rows.shape == (PAGES * PAGE, 584)
    assert torch.equal(rows[130, :448], nope[3])
    assert torch.equal(rows[130, 576:583], pack.scale_k_nope_ue8m0[3])


@pytest.mark.sglang
def test_the_hisparse_c4_store_lands_at_the_device_slot():
    release = _drive(release_offering("HiSparseC4DevicePool"), "HiSparseC4DevicePool")
    assert release["unregistered"] == "AttributeError"
    written = dsv4_slot_rows(release["L1"], PAGE)[:, :576].ne(0).any(1).nonzero().flatten()
    # Logical 63, 64 and 130 at device 58, 59 and 125; logical 1 at the mapping's 1 - 5 = -4.
    assert set(written.tolist()) == {58, 59, 125, SIZE + PAGE - 4}


@pytest.mark.sglang
def test_the_uniform_pool_keeps_e4m3_rows_and_refuses_the_pack():
    release = _drive(release_offering("DeepSeekV4UniformFP8KVPool"), "DeepSeekV4UniformFP8KVPool")
    rows = release["L1"].reshape(-1, 512)
    latent = _latent(0, len(LOC)).reshape(len(LOC), 512)
    assert torch.equal(rows[LOC], latent.to(torch.float8_e4m3fn).view(torch.uint8))
    assert (release["pack"], release["freqs"], release["width"], release["past"]) == (
        "NotImplementedError",
        "AssertionError",
        "AssertionError",
        "IndexError",
    )


@pytest.mark.sglang
def test_the_call_site_quantiser_is_the_release_reference_but_for_the_interpreter_fp8_rounding():
    """quant_to_nope_fp8_rope_bf16_pack_triton, interpreted here: the same scales and RoPE; its
    e4m3 casts differ where Triton's interpreter rounds a tie away from zero or loses an exponent
    carry (docs/pools.md dsv4), and there torch's value is the nearer one, as a GPU's
    round-to-nearest-even conversion gives."""
    release_offering("DeepSeekV4SingleKVPool")
    reference = importlib.import_module("sglang.test.kernels.deepseek_v4.k_cache_reference")
    latent = _latent(1, 64)
    theirs = reference.quant_to_nope_fp8_rope_bf16_pack_triton(latent.reshape(64, 512))
    ours = quantise_pack(latent)
    assert torch.equal(theirs.scale_k_nope_ue8m0, ours.scale_k_nope_ue8m0)
    assert torch.equal(theirs.k_rope_bf16.view(torch.uint8), ours.k_rope_bf16.view(torch.uint8))
    exponent = ours.scale_k_nope_ue8m0.to(torch.int32) - 127
    tiles = latent.reshape(64, 512)[:, :448].float().reshape(64, 7, 64)
    scaled = (tiles * torch.exp2(-exponent.float())[..., None]).reshape(64, 448)
    ours_off = (scaled - ours.k_nope_fp8.float()).abs()
    theirs_off = (scaled - theirs.k_nope_fp8.float()).abs()
    assert (ours_off <= theirs_off).all()
    same = ours.k_nope_fp8.view(torch.uint8) == theirs.k_nope_fp8.view(torch.uint8)
    assert same.float().mean() > 0.9


@pytest.mark.parametrize(
    "fixture, pool",
    (
        ("dsv4_scales_unpadded", "dsv4"),  # scales packed without their pad byte
        ("dsv4_hisparse_logical_slot", "dsv4_hisparse_c4"),  # the logical id, not the device slot
        ("dsv4_uniform_one_layer", "dsv4_uniform_fp8"),  # every layer into the first's buffer
    ),
)
def test_a_faulty_v4_pool_is_caught_by_the_default_run(fixture, pool, tmp_path, capsys):
    status = main(
        ["run", "--sut", f"tests/fixtures/{fixture}.py", "--pool", pool, "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert pool in out and "FINDING " in out
