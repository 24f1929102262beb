"""`kvh sut install`'s door trials (harness/run/door_trials.py): one small write through each base
door, judged as a run judges it, says which doors cannot run here and why."""

from __future__ import annotations

from harness.run.door_trials import BASE_DOORS, CANNOT_RUN, FINDING, WRITES, try_base_doors
from harness.sut.load.loader import load_foreign
from tests.conftest import FIXTURES


def _trials(fixture: str) -> dict[str, object]:
    loaded = load_foreign(str(FIXTURES / f"{fixture}.py"))
    return {trial.door.pool: trial for trial in try_base_doors(loaded)}


def test_every_base_door_writes_where_the_release_runs_here():
    trials = _trials("current_pools")
    assert set(trials) == {door.pool for door in BASE_DOORS} == {"mha", "mla", "swa_mha"}
    assert all(trial.status == WRITES and trial.why == "" for trial in trials.values())


def test_a_door_that_imports_a_module_absent_here_cannot_run_and_says_why():
    trials = _trials("harness_gpu_module")
    mha = trials["mha"]
    assert mha.status == CANNOT_RUN and not mha.runs
    assert mha.why.startswith("import here: ") and "some_module_that_does_not_exist" in mha.why
    assert mha.describe().startswith("cannot run here: MHATokenToKVPool.set_kv_buffer (mha, ")
    # The fixture's MLA pool and its SWA pool's sub-pools are the builtin ones: they write.
    assert trials["mla"].status == trials["swa_mha"].status == WRITES


def test_a_door_that_raises_on_its_own_runs_and_its_finding_is_said():
    mha = _trials("own_attribute_error")["mha"]
    assert mha.status == FINDING and mha.runs
    assert "[exception]" in mha.why and "'not_there'" in mha.why


def test_sut_install_says_which_doors_cannot_run_and_still_exits_0(monkeypatch, capsys, tmp_path):
    import argparse

    import harness.cli.sut as verb

    loaded = load_foreign(str(FIXTURES / "harness_gpu_module.py"))
    stopped = []
    monkeypatch.setattr(loaded.module, "stop", lambda: stopped.append(True), raising=False)
    monkeypatch.setattr(verb, "install", lambda spec, requirement, requirements: (tmp_path, True))
    monkeypatch.setattr(verb, "installed_metadata", lambda spec: {})
    monkeypatch.setattr(verb, "load_isolated", lambda spec: loaded)
    code = verb.main(argparse.Namespace(action="install", specs=["sglang==0.5.99"]))
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and stopped == [True]  # the trial's worker is stopped, the install stands
    assert out[0].startswith(
        "sglang==0.5.99: installed and imported, but 1 of its 3 base write doors cannot run here"
    )
    assert out[1].startswith("  cannot run here: MHATokenToKVPool.set_kv_buffer (mha, ")
    assert "import here: " in out[1] and out[2:] == [
        "  writes here: MLATokenToKVPool.set_mla_kv_buffer (mla, the plain_mla call site)",
        "  writes here: SWAKVPool.set_kv_buffer (swa_mha, the plain call site)",
    ]
