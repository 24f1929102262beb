"""A decode-context-parallel rank's write. MHA (triton under --dcp-size > 1, triton_dcp.py): the
rank keeps the tokens whose position is its own, at id // dcp_size, through the MHA door's
dcp_kv_mask. The door campaign's 37 survivors of 0.5.23's masked path (memory_pool.py
2938-2960) were a gap: no scenario was a DCP rank's. MLA (flashinfer_mla under --dcp-size > 1,
backends/flashinfer_mla_dcp.py): the pool keeps the ids it owns; the scope campaign's MLA DCP
survivors were a gap, kvh's MLA pools being built at one rank."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from backends.registry import backend_named
from harness.run.bisect import probe_of
from harness.run.release_copy import release_folder, sparse_copy
from harness.sut.probe.capabilities import Capabilities, probe
from harness.sut.probe.limits import limit_before
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from pools.judge.token_writes import UndefinedBehaviour
from pools.kinds.registry import KINDS
from scenarios.defaults import default_scenarios
from scenarios.profiles import profile_named
from scenarios.reach import reach_scenario
from scenarios.serialize import ScenarioError, validate
from scenarios.slots import write_slots
from scenarios.strategies.dcp import pinned_dcp_rank
from tests.helpers.installed_release import release_offering


def _dcp(pool: str = "mha", name: str = "dcp-rank"):
    return next(s for s in default_scenarios(pool, "bf16", 0) if s.name == name)


def test_the_default_set_writes_a_dcp_rank_of_every_kind_that_can_be_one() -> None:
    ranked = [name for name, kind in KINDS.items() if kind.dcp_rank]
    assert ranked == ["mha", "mla"]
    scenario = _dcp()
    validate(scenario)
    g = scenario.geometry
    assert (g.dcp_size, g.dcp_rank, g.start_layer) == (2, 1, 3)
    prefill, step, unpositioned = scenario.forwards
    # Odd positions are rank 1's, each at its row id // 2; a batch without positions masks none.
    rows = write_slots(scenario, prefill, 3)
    assert [row is None for row in rows] == [p % 2 == 0 for p in prefill.positions]
    assert [r for r in rows if r is not None] == [
        s // 2 for s, p in zip(prefill.loc, prefill.positions) if p % 2
    ]
    assert write_slots(scenario, step, 4) == [None, step.loc[1] // 2]
    assert write_slots(scenario, unpositioned, 5) == [s // 2 for s in unpositioned.loc]


def test_an_mla_rank_keeps_the_ids_it_owns_whatever_the_positions() -> None:
    """0.5.23's MLA pool selects by id (id % dcp_size == dcp_rank): the positioned tokens it keeps
    are the MHA rank's, and of the batch without positions only the odd ids."""
    scenario = _dcp("mla")
    validate(scenario)
    prefill, _, unpositioned = scenario.forwards
    assert write_slots(scenario, prefill, 3) == [
        s // 2 if p % 2 else None for s, p in zip(prefill.loc, prefill.positions)
    ]
    assert write_slots(scenario, unpositioned, 5) == [
        s // 2 if s % 2 else None for s in unpositioned.loc
    ]


def test_the_exploring_run_s_reach_scenario_is_a_dcp_rank_s_for_triton_dcp() -> None:
    """Its pinned top-of-pool scenario, made rank 1 of 2 (scenarios/strategies/dcp.py): the rank
    keeps every other token, at the row the scenario gave it, up to slot 2^17."""
    reach = reach_scenario("mha", "bf16", profile_named("ci").pool_bytes, 0)
    ranked = pinned_dcp_rank(reach)
    validate(ranked)
    assert (ranked.geometry.dcp_size, ranked.geometry.dcp_rank) == (2, 1)
    for before, after in zip(reach.forwards, ranked.forwards):
        rows = write_slots(ranked, after, ranked.geometry.layer_ids[0])
        kept = [slot if index % 2 else None for index, slot in enumerate(before.loc)]
        assert rows == kept[: after.tokens]
    kept_rows = {row for f in ranked.forwards for row in write_slots(ranked, f, 0)} - {None}
    assert max(kept_rows) > 2**17
    swa = next(iter(default_scenarios("swa_mha", "bf16", 0)))
    assert pinned_dcp_rank(swa).geometry.dcp_size == 1


def test_a_dcp_rank_is_refused_where_no_rank_s_write_exists() -> None:
    scenario = _dcp()
    swa = next(s for s in default_scenarios("swa_mla", "bf16", 0) if s.name == "prefill")
    with pytest.raises(ScenarioError, match="DCP rank"):
        validate(replace(swa, geometry=replace(swa.geometry, dcp_size=2)))
    with pytest.raises(ScenarioError, match="v_head_dim"):
        validate(replace(scenario, geometry=replace(scenario.geometry, v_head_dim=16)))
    with pytest.raises(ScenarioError, match="one position"):
        validate(replace(scenario, forwards=[replace(scenario.forwards[0], positions=[1])]))
    prefill = next(s for s in default_scenarios("mha", "bf16", 0) if s.name == "prefill")
    positioned = replace(prefill.forwards[0], positions=[0] * len(prefill.forwards[0].loc))
    with pytest.raises(ScenarioError, match="only a DCP rank"):
        validate(replace(prefill, forwards=[positioned]))


@pytest.mark.parametrize("module", [judge_module("current"), builtin_module("current", "torch")],
                         ids=["judge", "builtin"])  # fmt: skip
def test_the_masked_door_divides_every_token_and_stores_the_kept_ones(module) -> None:
    pool = module.MHATokenToKVPool(
        size=8, page_size=1, dtype=torch.float8_e4m3fn, head_num=2, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    layer = type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()
    k, v = torch.full((3, 2, 16), 4.0), torch.full((3, 2, 16), 8.0)
    loc = module.KVWriteLoc(torch.tensor([5, 6, 7]), physical=True)
    pool.set_kv_buffer(layer, loc, k, v, 2.0, 4.0, dcp_kv_mask=torch.tensor([True, False, True]))
    stored = pool.get_key_buffer(0).float()
    assert (stored[[5, 7]] == 2.0).all() and (stored[6] == 0).all()
    assert (k == 2.0).all() and (v == 2.0).all()  # the caller's tensors, every token divided


def test_the_judge_names_no_bytes_for_a_masked_slot_past_the_buffer() -> None:
    module = judge_module("current")
    pool = module.MHATokenToKVPool(
        size=4, page_size=1, dtype=torch.bfloat16, head_num=1, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    layer = type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()
    k = torch.ones(2, 1, 16, dtype=torch.bfloat16)
    with pytest.raises(UndefinedBehaviour, match="past its buffer"):
        pool.set_kv_buffer(
            layer, torch.tensor([1, 9]), k, k.clone(), dcp_kv_mask=torch.tensor([1, 1])
        )


@pytest.mark.sglang
def test_the_release_s_masked_write_passes_and_a_fault_in_it_is_a_finding(tmp_path: Path):
    """0.5.23's TritonAttnBackend under dcp_size 2 writes through masked_set_kv_buffer_kernel
    (interpreted here); a copy whose kernel call reads K's token stride as its head stride (one
    of the campaign's survivors) writes other rows. Extend only: decode reaches the same door
    call (the default --sut run judges both modes)."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    triton_dcp, scenario = backend_named("triton_dcp"), _dcp()
    assert not probe_of("sglang", scenario, triton_dcp, "extend").finding
    pool = Path("sglang/srt/mem_cache/memory_pool.py")
    copy = sparse_copy(release_folder("sglang"), tmp_path / "release", [pool], with_siblings=False)
    text = (copy / pool).read_text()
    call = text.index("masked_set_kv_buffer_kernel[(N,)](")
    stride = text.index("cache_k.stride(0),", call)
    (copy / pool).unlink()
    (copy / pool).write_text(text[:stride] + "cache_k.stride(1)," + text[stride + 18 :])
    assert probe_of(f"sglang@{copy}", scenario, triton_dcp, "extend").finding


def _mla_rank_pool(module, size: int, rank: int):
    return module.MLATokenToKVPool(
        size=16, page_size=1, dtype=torch.bfloat16, kv_lora_rank=4, qk_rope_head_dim=2,
        layer_num=1, device="cpu", enable_memory_saver=False, dcp_size=size, dcp_rank=rank,
    )  # fmt: skip


@pytest.mark.sglang
@pytest.mark.parametrize("size, rank", [(2, 1), (4, 0), (4, 3)])
def test_the_judge_and_builtin_mla_ranks_keep_what_the_installed_release_keeps(size, rank):
    """Every rank's ids, the reserved id 0 and duplicates among them, written through each
    module's MLA pool on one rank: the judge's and the builtin's buffers are the release's (its
    class from the loader, its group stated with its parallel context), and the combined-row door
    asserts on all three."""
    release = release_offering("MLATokenToKVPool")
    assert probe(release).mla_dcp_rank is True
    layer = type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()
    loc = torch.tensor([0, 1, 2, 3, 5, 7, 8, 11, 3, 15, 1, 30, 33, 16])
    nope = torch.randn(len(loc), 1, 4, generator=torch.Generator().manual_seed(size + rank))
    rope = torch.randn(len(loc), 1, 2, generator=torch.Generator().manual_seed(rank))
    buffers = []
    for module in (release, judge_module("current"), builtin_module("current", "torch")):
        pool = _mla_rank_pool(module, size, rank)
        pool.set_mla_kv_buffer(layer, loc, nope.bfloat16(), rope.bfloat16())
        with pytest.raises(AssertionError):
            pool.set_kv_buffer(layer, loc, torch.cat([nope, rope], -1).bfloat16(), None)
        buffers.append(pool.get_key_buffer(0).clone())
    assert buffers[0].any()
    assert torch.equal(buffers[0], buffers[1]) and torch.equal(buffers[0], buffers[2])


def test_a_release_without_an_mla_dcp_rank_cannot_apply_to_flashinfer_mla_dcp() -> None:
    older = Capabilities(mla_dcp_rank=False)
    limit = limit_before(older, "mla", "cpu", "flashinfer_mla_dcp")
    assert limit is not None and limit.name == "no-mla-dcp-rank" and limit.cannot_apply
    assert limit_before(older, "mla", "cpu", "flashinfer_mla") is None
    assert limit_before(Capabilities(mla_dcp_rank=True), "mla", "cpu", "flashinfer_mla_dcp") is None


@pytest.mark.sglang
def test_the_release_s_mla_rank_passes_and_a_fault_in_its_selection_is_a_finding(tmp_path: Path):
    """0.5.23's FlashInferMLAAttnBackend hands every rank's ids to the MLA pool, whose naive
    scatter keeps the rank's; a copy that keeps every id (the selection gone) writes the other
    ranks' tokens over this rank's rows."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    backend, scenario = backend_named("flashinfer_mla_dcp"), _dcp("mla")
    assert not probe_of("sglang", scenario, backend, "extend").finding
    kernel = Path("sglang/kernels/ops/kvcache/mla_buffer.py")
    copy = sparse_copy(release_folder("sglang"), tmp_path / "release", [kernel], False)
    text = (copy / kernel).read_text()
    selection = "is_valid &= loc % dcp_world_size == dcp_rank"
    assert selection in text
    (copy / kernel).unlink()
    (copy / kernel).write_text(text.replace(selection, "pass", 1))
    assert probe_of(f"sglang@{copy}", scenario, backend, "extend").finding


@pytest.mark.sglang
def test_a_release_whose_context_cannot_state_the_group_fails_its_rank_s_writes(tmp_path: Path):
    """The loader offers an MLA DCP rank wherever the parallel context reads the group; it does
    not try the override, so a context whose override refuses every field (one of the campaign's
    mutants) is a finding on the rank's writes, not a combination that cannot apply."""
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    backend, scenario = backend_named("flashinfer_mla_dcp"), _dcp("mla")
    context = Path("sglang/srt/runtime_context.py")
    copy = sparse_copy(release_folder("sglang"), tmp_path / "release", [context], False)
    text = (copy / context).read_text()
    unknown = "unknown = set(kwargs) - _parallel_fields()"
    assert unknown in text
    (copy / context).unlink()
    (copy / context).write_text(text.replace(unknown, "unknown = set(kwargs) | _parallel_fields()"))
    assert probe_of(f"sglang@{copy}", scenario, backend, "extend").finding
