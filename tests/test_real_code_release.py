"""The release's own backend code is what runs (backends/real_code.py): a write-path fault planted
in a copy of a release's backend source is a finding against that backend in the default run,
naming the file and line of the release's write call, and never a skip."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_kvh
from tests.helpers.planted_release import copy_release, replace_file

pytestmark = [pytest.mark.sglang, pytest.mark.slow, pytest.mark.e2e]

TRITON = Path("srt/layers/attention/triton_backend.py")
ASCEND = Path("srt/hardware_backend/npu/attention/ascend_backend.py")
DSA = Path("srt/layers/attention/dsa_backend.py")
QSA = Path("srt/layers/attention/qwen_sparse_attn_backend.py")


@dataclass(frozen=True)
class Fault:
    """A write-path fault planted in one function of a backend's release source (triton's,
    unless `backend` and `file` say otherwise)."""

    function: str
    old: str
    new: str
    pool: str
    dtype: str
    mode: str
    span: int = 8  # how many lines the write call may stand from the planted change
    backend: str = "triton"
    file: Path = TRITON


FAULTS = {
    # The decode write passes the untranslated full loc as its SWA loc, so SWA layers are
    # written at full-pool slot ids (the class of a loc taken from the wrong forward field).
    "decode-swa-loc-untranslated": Fault(
        "forward_decode",
        "swa_loc=self.forward_metadata.swa_out_cache_loc,",
        "swa_loc=forward_batch.out_cache_loc,",
        "swa_mha",
        "bf16",
        "decode",
    ),
    # The MLA extend write on an fp8 cache skips the division by k_scale (the path of #34765,
    # FP8 MLA written with unit scale): issue 27's fixture, as the release's own code.
    "mla-fp8-no-division": Fault(
        "forward_extend",
        "k_scaled = k.clone().div_(layer.k_scale)",
        "k_scaled = k.clone()",
        "mla",
        "fp8_e4m3",
        "extend",
    ),
    # The decode write ignores save_kv_cache=False (a KV-sharing layer's forward): the rows of
    # the layer told not to save are written (the `unsaved-layer-decode` scenario).
    "decode-writes-unsaved": Fault(
        "forward_decode", "if save_kv_cache:", "if k is not None:", "mha", "bf16", "decode", 30
    ),
}

# Faults in three other backends' release classes, planted in one copy and judged by one run.
OTHER_BACKENDS = {
    # ascend's release class, its module imported with torch_npu and sgl_kernel_npu stood in:
    # its extend drops the SWA loc, so SWA layers are written at full-pool slot ids.
    "ascend-swa-loc-dropped": Fault(
        "forward_extend",
        "KVWriteLoc(cache_loc, swa_loc)",
        "KVWriteLoc(cache_loc, None)",
        "swa_mha",
        "bf16",
        "extend",
        backend="ascend",
        file=ASCEND,
    ),
    # dsa's release class (its indexer's key store stays the model's, model_first): its extend
    # writes the tokens' rows in reverse order.
    "dsa-loc-reversed": Fault(
        "forward_extend",
        "forward_batch.out_cache_loc",
        "forward_batch.out_cache_loc.flip(0)",
        "hisparse_dsa",
        "bf16",
        "extend",
        backend="dsa",
        file=DSA,
    ),
    # qsa's release class (its indexer's stores stay the model's): its extend swaps K and V.
    "qsa-k-v-swapped": Fault(
        "forward_extend",
        "layer, forward_batch.out_cache_loc, k, v",
        "layer, forward_batch.out_cache_loc, v, k",
        "qsa",
        "bf16",
        "extend",
        backend="qsa",
        file=QSA,
    ),
}


def _release_with(fault: Fault, folder: Path) -> tuple[str, list[int]]:
    """The copy with `fault` planted; returns the SUT spec and the lines changed."""
    spec, lines = _release_with_all([fault], folder)
    return spec, lines[0]


def _release_with_all(faults: list[Fault], folder: Path) -> tuple[str, list[list[int]]]:
    """One copy with every fault planted (one a file); the SUT spec and each one's lines."""
    copy = copy_release(folder)
    changed = []
    for fault in faults:
        source = (copy / fault.file).read_text()
        start = source.index(f"    def {fault.function}(")
        end = source.index("\n    def ", start + 1)
        planted = source[:start] + source[start:end].replace(fault.old, fault.new) + source[end:]
        assert planted != source, f"the release's {fault.function} no longer has {fault.old!r}"
        replace_file(copy, fault.file, planted)
        changed.append([n for n, line in enumerate(planted.splitlines(), 1) if fault.new in line])
    return f"sglang@{folder}", changed


def _site_near(fault: Fault, findings: list[str], planted: list[int]) -> None:
    """The first finding names the fault's function in its file, within its span of the plant."""
    assert all(f"/{fault.backend}:{fault.mode}@" in line for line in findings), findings
    name = re.escape(fault.file.name)
    site = re.search(rf"release code: ({name}:(\d+) in {fault.function})", findings[0])
    assert site, findings[0]
    near = [line for line in planted if abs(line - int(site.group(2))) <= fault.span]
    assert near, (site.group(1), planted)


@pytest.mark.parametrize("name", FAULTS)
def test_a_fault_planted_in_a_release_backend_is_a_finding_with_its_file_and_line(name, tmp_path):
    fault = FAULTS[name]
    spec, planted = _release_with(fault, tmp_path / "release")
    result = run_kvh(
        "run", "--sut", spec, "--backend", fault.backend, "--pool", fault.pool,
        "--dtype", fault.dtype, "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "real code run: " in result.stderr and fault.backend in result.stderr
    findings = [line for line in result.stdout.splitlines() if line.startswith("FINDING ")]
    assert findings, result.stdout[-3000:]
    _site_near(fault, findings, planted)


def test_faults_planted_in_ascend_dsa_and_qsa_are_findings_through_their_release_classes(tmp_path):
    faults = list(OTHER_BACKENDS.values())
    spec, planted = _release_with_all(faults, tmp_path / "release")
    result = run_kvh(
        "run", "--sut", spec, "--backend", ",".join(f.backend for f in faults),
        "--pool", ",".join(f.pool for f in faults), "--dtype", "bf16",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    found = [line for line in result.stdout.splitlines() if line.startswith("FINDING ")]
    for fault, lines in zip(faults, planted):
        assert f" {fault.backend}," in result.stderr.split("real code run: ")[1].splitlines()[0]
        own = [line for line in found if f"/{fault.backend}:" in line]
        assert own, (fault.backend, result.stdout[-3000:])
        _site_near(fault, own, lines)


def test_the_unplanted_copy_passes_so_the_finding_is_the_fault(tmp_path):
    copy_release(tmp_path / "release")
    result = run_kvh(
        "run", "--sut", f"sglang@{tmp_path / 'release'}", "--backend", "triton",
        "--pool", "swa_mha", "--dtype", "bf16", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "real code run: " in result.stderr
