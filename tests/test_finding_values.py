"""A bytes finding says what: the expected and the written element of its first difference, in
hex and decoded in the cache dtype, and the scenario's input and scale that produced it; judged
on two faults that skip the k_scale division (a pool's, and triton's MLA call site's)."""

from __future__ import annotations

import re

import torch

from backends.registry import BACKENDS
from harness.compare.element_values import element_note
from harness.plan.baseline import baseline_for
from harness.plan.call_site_overrides import with_call_site_overrides
from harness.plan.candidate import Candidate
from harness.report.repro_files import load_repro, recorded_command, save_repro
from harness.run.cells import check_scenario
from harness.sut.load.loader import load_foreign
from reports.finding_groups import fold_numbers
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios
from scenarios.materialize import token_tensors
from tests.conftest import FIXTURES

NOTE = re.compile(
    r"expected (?P<dtype>\w+) 0x(?P<want>[0-9A-F]+) \((?P<want_value>[^)]+)\), "
    r"wrote 0x(?P<got>[0-9A-F]+) \((?P<got_value>[^)]+)\); input (?P<input>\S+) with "
    r"k_scale (?P<scale>\S+) \(element (?P<index>\d+) of the token's row\)"
)


def _finding(spec: str, pool: str, dtype: str, backend: str):
    loaded = load_foreign(spec)
    table, _ = with_call_site_overrides(loaded.module, BACKENDS)
    scenario = next(s for s in default_scenarios(pool, dtype, 0) if s.name == "scaled-float")
    candidate = Candidate(loaded.spec, loaded.module, loaded.era, "-", "cpu", backend, "extend")
    [result] = check_scenario(
        scenario, baseline_for(table[backend], "extend"), [candidate], 60.0, table[backend]
    )
    assert result.outcome is Outcome.FINDING
    _RESULTS[spec] = result
    return scenario, next(f for f in result.findings if f.oracle == "bytes")


_RESULTS: dict = {}  # the last result of each SUT, for the repro test


def _cast(value: float, dtype: torch.dtype) -> float:
    return float(torch.tensor(value).to(dtype).float())


def test_a_pool_that_skips_the_division_shows_the_scaled_value_expected_and_the_raw_one_written():
    scenario, finding = _finding(str(FIXTURES / "scale_ignored.py"), "mha", "bf16", "plain")
    note = NOTE.search(finding.headline())
    assert note and note["dtype"] == "bf16", finding.headline()
    # The numbers agree with the scenario itself: its input at that element, and its scale.
    layer = int(finding.buffer[1:].split(".")[0])
    token = int(finding.written_by.rsplit(" ", 1)[1])
    given = token_tensors(scenario, finding.forward, layer, "cpu")["k"][token].flatten()
    value = float(given[int(note["index"])])
    assert float(note["input"]) == float(f"{value:.6g}")
    assert float(note["scale"]) == scenario.k_scale.value
    scaled = _cast(value / scenario.k_scale.value, torch.bfloat16)
    assert float(note["want_value"]) == float(f"{scaled:.6g}")
    assert float(note["got_value"]) == float(f"{_cast(value, torch.bfloat16):.6g}")
    # The hex is the element's bf16 word.
    word = torch.tensor([_cast(value, torch.bfloat16)]).to(torch.bfloat16).view(torch.int16)
    assert int(note["got"], 16) == int(word) & 0xFFFF


def test_triton_mla_without_the_division_names_the_fp8_values_and_k_scale():
    mutant = "mutants.zoo.triton_mla_fp8_no_division"
    scenario, finding = _finding(mutant, "mla", "fp8_e4m3", "triton")
    note = NOTE.search(finding.headline())
    assert note and note["dtype"] == "fp8_e4m3", finding.headline()
    assert float(note["scale"]) == scenario.k_scale.value
    assert note["want"] != note["got"] and len(note["want"]) == 2  # one fp8 byte each


def test_a_note_decodes_only_rows_of_the_cache_dtype():
    mha = default_scenarios("mha", "bf16", 0)[0]
    want = torch.tensor([0.5, 1.0], dtype=torch.bfloat16).view(torch.uint8)
    got = torch.tensor([0.5, 2.0], dtype=torch.bfloat16).view(torch.uint8)
    assert element_note(mha, "L0.k", want, got, 2) == ("expected bf16 0x3F80 (1), wrote 0x4000 (2)")
    fp4 = default_scenarios("mha_fp4", "bf16", 0)[0]
    assert element_note(fp4, "L0.k", want, got, 2) is None


def test_the_values_fold_out_of_a_finding_signature():
    one = "differ: expected bf16 0x3F80 (1), wrote 0x4000 (2); input 2 with k_scale 4"
    two = "differ: expected bf16 0xC006 (-2.1), wrote 0xBF86 (-1); input -1 with k_scale 0.5"
    assert fold_numbers(one) == fold_numbers(two)


def test_a_repro_file_keeps_the_values_and_the_command_line_of_its_run(tmp_path):
    spec = str(FIXTURES / "scale_ignored.py")
    _, finding = _finding(spec, "mha", "bf16", "plain")
    command = f"kvh run --sut {spec} --pool mha --dtype bf16"
    path = save_repro(tmp_path, _RESULTS[spec], command)
    _, _, recorded = load_repro(path)
    assert finding.headline() in [f.headline() for f in recorded]
    assert NOTE.search(recorded[0].headline()) and recorded_command(path) == command
    # The file is named by what was found: another command line, the same file.
    assert save_repro(tmp_path, _RESULTS[spec], "kvh run") == path
