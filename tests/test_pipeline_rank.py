"""A pipeline-parallel rank's pool starts past layer 0 (Geometry.start_layer, the kinds whose
record says pipeline_rank): the default set writes one through layers 3 to 6, so a door that
indexes a layer's buffers by its global id is a finding, as the mutation campaign's survivors on
`layer_id - self.start_layer` (memory_pool.py) asked for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backends.registry import backend_named
from harness.run.bisect import probe_of
from pools.kinds.registry import KINDS
from scenarios.defaults import default_scenarios
from scenarios.serialize import ScenarioError, validate
from tests.conftest import FIXTURES, run_kvh


def _ranked(pool: str):
    return next(s for s in default_scenarios(pool, "bf16", 0) if s.name == "pipeline-rank")


def test_the_default_set_writes_a_later_rank_s_pool_of_every_kind_that_can_be_one() -> None:
    ranked = [name for name, kind in KINDS.items() if kind.pipeline_rank]
    assert set(ranked) >= {"mha", "mla", "mha_hnd"}
    for pool in ranked:
        scenario = _ranked(pool)
        assert scenario.geometry.start_layer == 3 and scenario.geometry.kv_layer_ids == [3, 4, 5, 6]
        validate(scenario)
    swa = next(s for s in default_scenarios("swa_mha", "bf16", 0) if s.name == "prefill")
    assert all(s.name != "pipeline-rank" for s in default_scenarios("swa_mha", "bf16", 0))
    with pytest.raises(ScenarioError, match="pipeline rank"):
        validate(replace(swa, geometry=replace(swa.geometry, start_layer=3)))
    mha = _ranked("mha")
    with pytest.raises(ScenarioError, match="outside"):
        validate(replace(mha, forwards=[replace(mha.forwards[0], layers=[0])]))


def test_a_door_that_indexes_by_the_global_layer_id_is_a_finding_on_a_later_rank() -> None:
    plain = backend_named("plain")
    fault = str(FIXTURES / "pipeline_rank_global_index.py")
    assert probe_of(fault, _ranked("mha"), plain, "extend").finding
    prefill = next(s for s in default_scenarios("mha", "bf16", 0) if s.name == "prefill")
    assert not probe_of(fault, prefill, plain, "extend").finding  # rank 0: the same rows


def test_a_backend_s_call_writes_a_later_rank_in_the_default_run(tmp_path) -> None:
    """Every backend runs the later rank in extend (backends/focus.py PIPELINE_RANK): on 0.5.14
    only fa3's call reached the MLA (nope, rope) door with a loc it unwraps, and the door's
    `layer_id - self.start_layer` mutants survived while no backend but plain ran past layer 0."""
    flags = ("--pool", "mha", "--backend", "fa3", "--dtype", "bf16", "--out", str(tmp_path))
    done = run_kvh("run", "--sut", str(FIXTURES / "pipeline_rank_global_index.py"), *flags)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "fa3:extend@cpu `pipeline-rank`" in done.stdout
