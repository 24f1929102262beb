"""SUT workers: the protocol round-trip, and workers that crash, hang or print garbage.

The fake SUT environments are built by the tests themselves: a folder holding one module with
SGLang's names (the same shape as a `pip install --target` folder).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest
import torch

from backends.registry import backend_named
from harness.compare.comparison import judge
from harness.compare.expectations import expected_writes
from harness.plan.baseline import baseline_for
from harness.run.execute import execute
from harness.sut.worker.client import IsolatedSut
from harness.sut.worker.protocol import (
    decode_execution,
    decode_tensor,
    encode_execution,
    encode_tensor,
)
from tests.conftest import scenario_named

FAKE_HEADER = """
import torch
from pools.builtin.sut import builtin_module
_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool, SWAKVPool = _base.MLATokenToKVPool, _base.SWAKVPool
"""

FAKES = {
    "fake_good": "MHATokenToKVPool = _base.MHATokenToKVPool\n",
    "fake_crash": """
import os
class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, *args, **kwargs):
        print("about to die", flush=True)
        os._exit(7)
""",
    # Ignores SIGALRM so the worker's own time limit cannot fire (as with a hang inside C code
    # holding the GIL): only the parent can notice.
    "fake_hang": """
import signal, time
class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, *args, **kwargs):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            time.sleep(0.05)
""",
    "fake_wrong": """
class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, k, v, *args, **kwargs):
        print("noise on stdout must not corrupt the protocol")
        super().set_kv_buffer(layer, loc_info, k.flip(0).clone(), v, *args, **kwargs)
""",
    # Writes the padding sink with bytes that differ on every run, as a release whose torch
    # index_put_ picks which duplicate of slot 0 wins (SGLang 0.5.22 on swa_mha did): slot 0 is
    # a sink whose bytes no oracle reads, but it changes the buffer's digest run to run.
    "fake_restless_sink": """
import itertools
_runs = itertools.count(1)  # one pool per run
class MHATokenToKVPool(_base.MHATokenToKVPool):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.run = next(_runs)
    def set_kv_buffer(self, layer, loc_info, k, v, *args, **kwargs):
        super().set_kv_buffer(layer, loc_info, k, v, *args, **kwargs)
        for buffer in self.k_buffer if self.run % 2 else self.v_buffer:  # k one run, v the next
            buffer.view(torch.uint8).view(-1)[0] = self.run % 251
""",
}


@pytest.fixture(scope="module")
def fake_env(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fake_env")
    for name, body in FAKES.items():
        (folder / f"{name}.py").write_text(FAKE_HEADER + textwrap.dedent(body))
    return str(folder)


@pytest.fixture(scope="module")
def scenario_and_baseline():
    scenario = scenario_named("mha", "bf16", "prefill")
    return scenario, execute(baseline_for(backend_named("plain"), "extend"), scenario)


def test_protocol_round_trip_sends_bytes_only_when_asked(scenario_and_baseline):
    _, baseline = scenario_and_baseline
    digests_only = encode_execution(baseline, None)
    assert all(t["data"] is None for t in digests_only["buffers"].values())
    rebuilt = decode_execution(digests_only, known=baseline)
    assert rebuilt.buffers.keys() == baseline.buffers.keys()
    full = decode_execution(encode_execution(baseline, "all"))
    assert all(torch.equal(full.buffers[n], baseline.buffers[n]) for n in baseline.buffers)


def test_a_buffer_of_no_rows_travels_too():
    # A layer-split rank's peer layers are buffers of zero rows (tests/test_layer_split.py).
    empty = torch.empty((0, 2, 8), dtype=torch.uint8)
    assert decode_tensor(encode_tensor(empty, with_data=True)).shape == (0, 2, 8)


def test_the_worker_speaks_the_protocol_version_the_client_does():
    from harness.cli.worker import PROTOCOL_VERSION
    from harness.sut.worker.protocol import VERSION

    assert PROTOCOL_VERSION == VERSION


def test_a_loaded_sut_travels_as_a_typed_record_with_everything_but_its_module():
    import json

    from harness.sut.load.loader import LoadedSut
    from harness.sut.probe.capabilities import Capabilities

    sent = LoadedSut(
        "sglang",
        object(),
        "bundled",
        version="0.5.14",
        capabilities=Capabilities(mla_door_needs_gpu=True, swa_over_mla=False),
        unfit="",
        root="/releases/sglang-0.5.14",
        real_code=("triton", "fa3"),
        real_code_missing=(("aiter", "aiter did not import: no ROCm"),),
        offered=("MHATokenToKVPool", "SWAKVPool"),
        unoffered=(("UnifiedKVPool", "not in this release"),),
    )
    client = object()
    received = LoadedSut.from_dict(
        {**json.loads(json.dumps(sent.to_dict())), "spec": "sglang==0.5.14"}, client
    )
    assert received.module is client and received.in_worker and received.spec == "sglang==0.5.14"
    fields = ("era", "version", "capabilities", "root", "real_code", "real_code_missing")
    assert all(getattr(received, name) == getattr(sent, name) for name in fields)
    assert (received.offered, received.unoffered) == (sent.offered, sent.unoffered)


def test_a_raise_travels_with_its_class_and_place_so_a_worker_can_raise_alike():
    import json

    from harness.compare.oracles import raised_alike
    from harness.compare.snapshot import ErrorPlace, Execution

    raised = Execution(
        error="IndexError: 16 slots for 9 rows",
        error_at="forward 0, layer 1",
        error_type="IndexError",
        error_place=ErrorPlace("write", 0, 1, "set_kv_buffer"),
    )
    travelled = decode_execution(json.loads(json.dumps(encode_execution(raised, "all"))))
    assert (travelled.error_type, travelled.error_place) == (raised.error_type, raised.error_place)
    assert raised_alike(raised, travelled)


def test_good_worker_matches_the_baseline_and_reports_its_era(fake_env, scenario_and_baseline):
    scenario, baseline = scenario_and_baseline
    with IsolatedSut("fake_good", prefix=fake_env) as sut:
        assert sut.hello()[0] == "current"
        got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
        assert got.error is None
        assert judge(scenario, baseline, got, expected_writes(scenario)) == []


def test_wrong_bytes_travel_back_and_are_localised(fake_env, scenario_and_baseline):
    scenario, baseline = scenario_and_baseline
    with IsolatedSut("fake_wrong", prefix=fake_env) as sut:
        got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
        findings = judge(scenario, baseline, got, expected_writes(scenario))
        assert findings and findings[0].oracle == "bytes" and findings[0].slot is not None


def test_a_worker_sends_the_bytes_of_the_run_it_sent_the_digests_of(
    fake_env, scenario_and_baseline
):
    """Asking for bytes must not run the scenario again: a second run may differ in another
    buffer (here the sinks of v after those of k), which would then arrive as neither digest nor
    bytes, a missing buffer and a false [shape] finding; a replay then ran clean, and
    Hypothesis raised FlakyFailure (exit 3 on 0.5.22 at --profile ci)."""
    scenario, baseline = scenario_and_baseline
    with IsolatedSut("fake_restless_sink", prefix=fake_env) as sut:
        for _ in range(4):
            got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
            assert got.error is None and got.buffers.keys() == baseline.buffers.keys()
            assert judge(scenario, baseline, got, expected_writes(scenario)) == []


def test_a_scenario_is_serialised_once_and_each_request_carries_its_own(fake_env, monkeypatch):
    """A scenario runs through every cell of its pool kind: its JSON is kept and sent again,
    and a kept one is never sent for another scenario (the worker would run the wrong one)."""
    from scenarios import serialize

    serialised = []
    to_dict = serialize.to_dict
    monkeypatch.setattr(serialize, "to_dict", lambda s: serialised.append(s.name) or to_dict(s))
    scenarios = [scenario_named("mha", "bf16", name) for name in ("prefill", "decode")]
    baselines = [execute(baseline_for(backend_named("plain"), "extend"), s) for s in scenarios]
    with IsolatedSut("fake_good", prefix=fake_env) as sut:
        for scenario, baseline in [*zip(scenarios, baselines)] * 2:
            got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
            assert got.error is None
            assert got.buffers.keys() == baseline.buffers.keys()
            assert judge(scenario, baseline, got, expected_writes(scenario)) == []
    assert serialised == ["prefill", "decode"]


class SentLines:
    """A worker's stdin that records each request line it is written."""

    def __init__(self, stream):
        self.stream, self.lines = stream, []

    def write(self, text: str) -> int:
        self.lines.append(json.loads(text))
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _execute_clean(sut: IsolatedSut, scenario, baseline) -> None:
    got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
    assert got.error is None, got.error
    assert judge(scenario, baseline, got, expected_writes(scenario)) == []


def test_a_scenario_goes_whole_once_to_a_worker_process_then_by_its_key(fake_env, monkeypatch):
    """The worker keeps what the parent says it holds: each scenario is sent whole once, named
    by its key after that, sent whole again once the parent's kept set drops it (and the worker
    is told to forget it), and again to a new worker process. Each run is judged against its
    own scenario's baseline, so a key that named the wrong scenario would be a finding."""
    from harness.sut.worker import client

    monkeypatch.setattr(client, "SERIALISED_KEPT", 2)
    names = ("prefill", "decode", "small-decode")
    scenarios = {name: scenario_named("mha", "bf16", name) for name in names}
    baselines = {
        name: execute(baseline_for(backend_named("plain"), "extend"), s)
        for name, s in scenarios.items()
    }
    with IsolatedSut("fake_good", prefix=fake_env) as sut:
        sut.hello()
        sent = sut.process.stdin = SentLines(sut.process.stdin)
        for name in ("prefill", "decode", "prefill", "decode", "small-decode", "prefill"):
            _execute_clean(sut, scenarios[name], baselines[name])
        keys = [line["scenario_key"] for line in sent.lines]
        whole = ["scenario" in line for line in sent.lines]
        forgotten = [line.get("forget", []) for line in sent.lines]
        # prefill and decode whole, then by key; small-decode drops prefill (two kept)
        assert whole == [True, True, False, False, True, True]
        assert keys[:4] == [keys[0], keys[1], keys[0], keys[1]] and keys[0] != keys[1]
        assert forgotten == [[], [], [], [], [keys[0]], [keys[1]]]
        sut.stop()
        restarted = []
        hello = sut._await_hello

        def record_after_hello() -> None:
            hello()
            restarted.append(SentLines(sut.process.stdin))
            sut.process.stdin = restarted[-1]

        sut._await_hello = record_after_hello
        _execute_clean(sut, scenarios["prefill"], baselines["prefill"])
        assert ["scenario" in line for line in restarted[0].lines] == [True]


def test_a_key_the_worker_does_not_hold_is_sent_again_whole_not_a_finding(fake_env):
    """Were the two sides' bookkeeping to disagree, that is the harness's error: the worker says
    it does not hold the key, and the parent sends the request again whole."""
    scenario = scenario_named("mha", "bf16", "decode")
    baseline = execute(baseline_for(backend_named("plain"), "extend"), scenario)
    with IsolatedSut("fake_good", prefix=fake_env) as sut:
        sut.hello()
        sent = sut.process.stdin = SentLines(sut.process.stdin)
        sut._held.add(sut._kept(scenario).key)  # believed held, never sent
        _execute_clean(sut, scenario, baseline)
        assert ["scenario" in line for line in sent.lines] == [False, True]


@pytest.mark.slow
def test_crashing_worker_is_a_finding_with_stderr_and_is_restarted(fake_env, scenario_and_baseline):
    scenario, baseline = scenario_and_baseline
    with IsolatedSut("fake_crash", prefix=fake_env) as sut:
        first = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
        assert "worker crashed: exit code 7" in first.error and "about to die" in first.error
        second = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
        assert "worker crashed" in second.error and sut.restarts == 1


@pytest.mark.slow
def test_hanging_worker_is_killed_and_reported(fake_env, scenario_and_baseline):
    scenario, baseline = scenario_and_baseline
    with IsolatedSut("fake_hang", prefix=fake_env, grace_s=1.0) as sut:
        sut.hello()
        pid = sut.process.pid
        got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline, timeout_s=0.5)
        assert got.error.startswith("worker hung") and got.error_at == "SUT worker (hung)"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_garbage_printing_worker_is_reported(tmp_path, scenario_and_baseline):
    scenario, baseline = scenario_and_baseline
    liar = tmp_path / "liar"
    liar.write_text(f"#!{sys.executable}\nprint('this is not json')\n")
    liar.chmod(liar.stat().st_mode | stat.S_IEXEC)
    with IsolatedSut("anything", python=str(liar)) as sut:
        got = sut.execute(scenario, "plain", "extend", "cpu", known=baseline)
    assert got.error.startswith("worker garbage") and "this is not json" in got.error


def test_leaving_the_with_block_stops_the_worker_also_on_an_exception(fake_env):
    with pytest.raises(RuntimeError, match="the caller failed"):
        with IsolatedSut("fake_good", prefix=fake_env) as sut:
            sut.hello()
            worker = sut.process
            raise RuntimeError("the caller failed")
    assert sut.process is None and worker.poll() is not None
