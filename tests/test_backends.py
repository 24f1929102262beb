"""Every backend's old and new call sites write the same bytes, and each quirk is modelled.

Each check runs a backend's oldest call site on the reference engine (the runner's baseline)
against its other eras on the torch engine, through the runner's own check_scenario.
"""

from __future__ import annotations

import json

import pytest
import torch

from backends.registry import BACKENDS
from harness.plan.baseline import baseline_for
from harness.plan.candidate import Candidate
from harness.run.cells import check_scenario
from harness.run.execute import execute
from pools.builtin.sut import builtin_module
from scenarios.materialize import token_tensors
from tests.fixtures.backend_probes import probe

# The backends PR #27695 rewrote: every entry that models a release's call site (its census).
PR_27695 = {name for name, backend in BACKENDS.items() if backend.census is not None}
DEVICE_TYPES = {"any", "cuda", "rocm", "xpu", "musa", "npu", "cpu"}
REAL = sorted(PR_27695)
# One probe per mode that reaches the scaled branches of every call site.
PROBE = {"extend": "scaled", "extend_ragged": "scaled", "decode": "float"}


def candidate(backend: str, mode: str, era: str, engine: str = "torch", module=None) -> Candidate:
    return Candidate(
        "builtin", module or builtin_module(era, engine), era, engine, "cpu", backend, mode
    )


def test_registry_holds_every_backend_of_pr_27695_as_plain_data():
    assert PR_27695 and not {"plain", "plain_mla"} & PR_27695  # the canonical calls model none
    for name in PR_27695:
        census = BACKENDS[name].census
        assert census.files and all(file.startswith("sglang/") for file in census.files), name
        # A shape for every era run, in its own file or in the one it names as holding its calls.
        owner = BACKENDS[census.calls_of].census if census.calls_of else census
        assert set(BACKENDS[name].eras) <= set(owner.eras), name
    for backend in BACKENDS.values():
        data = backend.as_dict()
        json.dumps(data)  # plain data, printable by `kvh matrix`
        assert data["device_type"] in DEVICE_TYPES and data["pool_kinds"] and data["modes"]
        assert all(d["reason"] and (d["pr"] or d["evidence"]) for d in data["divergences"])
        assert all(skip["reason"] and skip["scope"] for skip in data["skips"])
    assert BACKENDS["intel_amx"].device_type == "cpu" and BACKENDS["ascend"].device_type == "npu"


@pytest.mark.parametrize("name", REAL)
def test_old_and_new_call_sites_write_the_same_bytes(name):
    backend = BACKENDS[name]
    pools = [p for p in ("swa_mha", "mla") if p in backend.pool_kinds] or list(
        backend.pool_kinds[:1]
    )
    checked = 0
    for pool in pools:
        for mode in backend.modes:
            scenario = probe(pool, PROBE[mode], backend.dtypes[0])
            if backend.skip_for(scenario, mode) is not None:
                continue
            others = [candidate(name, mode, era) for era in backend.eras]
            for result in check_scenario(scenario, baseline_for(backend, mode), others, 30.0):
                assert result.outcome in ("pass", "known_divergence"), (
                    result.label,
                    [f.headline() for f in result.findings],
                )
                checked += result.outcome == "pass"
    assert checked >= len(backend.modes)


def caller_k(backend: str, mode: str, pool: str, kind: str, era: str = "bundled"):
    """(k before the call, k after it) for forward 0, layer 0, as the backend received it."""
    scenario = probe(pool, kind)
    execution = execute(candidate(backend, mode, era), scenario)
    assert execution.error is None, execution.error
    drawn = token_tensors(scenario, 0, 0, "cpu")
    k = drawn["k"]
    if BACKENDS[backend].mla_input == "latent" and drawn["k_rope"] is not None:
        k = torch.cat([k, drawn["k_rope"]], dim=-1)
    after = execution.caller["f0.L0.k"].view(k.dtype).reshape(k.shape)
    return k, after, scenario


def test_triton_mla_scaled_prefill_keeps_k_and_decode_divides_it_in_place():
    before, after, _ = caller_k("triton", "extend", "mla", "float")
    assert torch.equal(before, after)  # divides a clone
    before, after, probe = caller_k("triton", "decode", "mla", "float")
    assert torch.equal(after, before.div_(probe.k_scale.value))  # k.div_(layer.k_scale)


def test_triton_clones_scaled_mha_extend_and_fa3_lets_the_pool_divide():
    before, after, _ = caller_k("triton", "extend", "mha", "scaled")
    assert torch.equal(before, after)
    before, after, probe = caller_k("fa3", "extend", "mha", "scaled")
    assert not torch.equal(before, after)
    assert torch.equal(after, before.div_(torch.tensor(probe.k_scale.value)))
    before, after, _ = caller_k("triton", "decode", "mha", "scaled")
    assert not torch.equal(before, after)  # decode does not clone


def test_context_parallel_zigzag_layout_and_round_trip():
    from backends.context_parallel import block_sizes, gather_full, zigzag_share

    tokens = torch.arange(19)
    assert block_sizes(19, 4) == [3, 3, 3, 2, 2, 2, 2, 2]
    assert zigzag_share(tokens, 0, 4).tolist() == [0, 1, 2, 17, 18]  # blocks 0 and 7
    assert zigzag_share(tokens, 1, 4).tolist() == [3, 4, 5, 15, 16]  # blocks 1 and 6
    for length in (1, 3, 8, 19, 40):
        assert torch.equal(gather_full(torch.arange(length), 4), torch.arange(length))


def test_context_parallel_write_equals_the_single_rank_write():
    scenario = probe("swa_mha", "cross")
    for era in ("legacy", "current"):
        gathered = execute(candidate("cp", "extend", era), scenario)
        single = execute(candidate("fa3", "extend", era), scenario)
        assert gathered.error is None and single.error is None
        assert all(torch.equal(gathered.buffers[n], single.buffers[n]) for n in single.buffers)


def test_backends_run_their_focus_and_declared_skips_hold_reasons():
    from backends.focus import BUILTIN_SCENARIOS, FOCUS, LOC_LIVES, PIPELINE_RANK
    from pools.kinds.registry import KINDS
    from scenarios.defaults import default_scenarios

    for pool in ("mha", "mla", "swa_mha"):
        names = {s.name for s in default_scenarios(pool, "bf16", 0)}
        assert names <= set(BUILTIN_SCENARIOS)
        # Only the SWA kinds live through remaps and shared loc storage (tests/test_loc_lives.py).
        unbuilt = {"small-cross"} | (set() if pool.startswith("swa_") else set(LOC_LIVES))
        # Only a kind a later pipeline rank's pool can be builds one (test_pipeline_rank.py).
        unbuilt |= set() if KINDS[pool].pipeline_rank else set(PIPELINE_RANK)
        assert {name for names in FOCUS.values() for name in names} - unbuilt <= names
    by_name = {s.name: s for s in default_scenarios("swa_mha", "bf16", 0)}
    triton = BACKENDS["triton"]
    assert triton.skip_for(by_name["int32-page64"], "extend").name == "out-of-focus"
    assert triton.skip_for(by_name["small-cross"], "extend").name == "no-cross-attention"
    assert triton.skip_for(by_name["small-decode"], "decode") is None
    assert BACKENDS["plain"].skip_for(by_name["int32-page64"], "extend") is None
    assert BACKENDS["plain"].skip_for(by_name["small-scaled"], "extend").name == "out-of-focus"
    assert BACKENDS["fa3"].skip_for(probe("mha", "cross"), "extend") is None  # user scenarios run
