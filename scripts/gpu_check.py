"""GPU check: compiled Triton vs torch vs the CPU reference on CUDA, in a few minutes.

    python scripts/gpu_check.py [--out kvh-out/gpu_check.json]      # on a CUDA (or ROCm) machine
    python scripts/gpu_check.py --cpu-interpret --out FILE          # the same code path on CPU

For every pool kind and dtype, the builtin scenarios run through the reference engine on CPU
(the baseline), the torch engine on the device and the Triton engine on the device. Three
comparisons per scenario: triton vs reference, torch vs reference, and triton vs torch on the
same device. The division rules of pools/builtin/engines/triton_scale.py are checked against the
device's own `div_` first: the CUDA rules come from reading aten and are unverified until this
runs. Then the GPU timing paths of `kvh bench` (CUDA-graph replay, cold L2) run through
tests/test_bench_gpu_paths.py: with fakes everywhere, and for real on the device. Exit 0: the
Triton engine equals torch on the device everywhere and differs from the reference only where
torch does, and every timing-path test passed (on CUDA none skipped); 1: otherwise; 2: no such
device.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Optional

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.compare.comparison import judge  # noqa: E402
from harness.compare.expectations import expected_writes  # noqa: E402
from harness.plan.candidate import Candidate  # noqa: E402
from harness.plan.devices import unavailable_reason  # noqa: E402
from harness.run.execute import execute
from pools.builtin.engines.triton_scale import scale_operand  # noqa: E402
from pools.builtin.sut import builtin_module  # noqa: E402
from pools.dtypes import DTYPES  # noqa: E402
from pools.kinds.token_major import MHA, MLA, SWA_MLA
from reports.atomic import write_json_atomic  # noqa: E402
from scenarios.defaults import default_scenarios  # noqa: E402
from scenarios.model import POOL_KINDS  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCALE_KINDS = ("float", "tensor", "param")
TIMING_PATH_TESTS = Path("tests") / "test_bench_gpu_paths.py"


def _scale(kind: str, value: float, device: str):
    if kind == "float":
        return value
    tensor = torch.tensor(value, dtype=torch.float32, device=device)
    return tensor if kind == "tensor" else torch.nn.Parameter(tensor, requires_grad=False)


def division_rules(device: str) -> list[dict]:
    """Does the declared rule reproduce `x.div_(s)` on this device, byte for byte?"""
    generator = torch.Generator().manual_seed(0)
    results = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x = (torch.randn(1 << 16, generator=generator) * 8).to(dtype)
        for kind in SCALE_KINDS:
            for value in (0.3, 1.7, 0.1, 7.3):
                scale = _scale(kind, value, device)
                torch_result = x.clone().to(device).div_(scale).cpu()
                mode, operand = scale_operand(scale, x.to(device))
                wide = x.float()
                emulated = (wide / operand if mode == "divide" else wide * operand).to(dtype)
                mismatched = int(
                    (emulated.view(torch.uint8) != torch_result.view(torch.uint8)).sum()
                )
                results.append(
                    {
                        "dtype": str(dtype),
                        "scale": kind,
                        "value": value,
                        "mode": mode,
                        "mismatched_bytes": mismatched,
                        "ok": mismatched == 0,
                    }
                )
    return results


def _label(findings: list) -> list[str]:
    return [f"{f.oracle}: {f.headline()}" for f in findings]


def all_cells() -> list[tuple[str, str]]:
    """(pool kind, backend): set_kv_buffer everywhere, and set_mla_kv_buffer on MLA pools."""
    return [(pool, "plain") for pool in POOL_KINDS] + [
        (MLA.name, "plain_mla"),
        (SWA_MLA.name, "plain_mla"),
    ]


def differential(
    device: str, cells: list[tuple[str, str]], dtypes: list[str], names: Optional[set[str]]
) -> list[dict]:
    """`names`: the builtin scenarios to run (None: all of them)."""
    results = []
    for pool, backend in cells:
        baseline = Candidate(
            "builtin", builtin_module("legacy", "reference"), "legacy", "reference", "cpu", backend
        )
        sides = {
            engine: Candidate(
                "builtin", builtin_module("current", engine), "current", engine, device, backend
            )
            for engine in ("torch", "triton")
        }
        for dtype in dtypes:
            for scenario in default_scenarios(pool, dtype, seed=0):
                if names is not None and scenario.name not in names:
                    continue
                expected = expected_writes(scenario)
                started = time.perf_counter()
                reference = execute(baseline, scenario, None)
                runs = {
                    engine: execute(candidate, scenario, None)
                    for engine, candidate in sides.items()
                }
                triton_vs_ref = judge(scenario, reference, runs["triton"], expected)
                torch_vs_ref = judge(scenario, reference, runs["torch"], expected)
                triton_vs_torch = judge(scenario, runs["torch"], runs["triton"], expected)
                # A device whose torch rounds its division differently from CPU makes both
                # engines differ from the reference in the same way: that is torch, not Triton.
                ok = not triton_vs_torch and (not triton_vs_ref or bool(torch_vs_ref))
                results.append(
                    {
                        "pool": pool,
                        "dtype": dtype,
                        "backend": backend,
                        "scenario": scenario.name,
                        "ok": ok,
                        "triton_vs_reference": _label(triton_vs_ref),
                        "torch_vs_reference": _label(torch_vs_ref),
                        "triton_vs_torch": _label(triton_vs_torch),
                        "seconds": round(time.perf_counter() - started, 3),
                    }
                )
    return results


def timing_paths(device: str) -> list[dict]:
    """The bench's GPU timing paths (CUDA-graph replay, cold L2): TIMING_PATH_TESTS in a pytest
    subprocess, one row per test. On a CUDA device a skipped test is not ok: the path it
    guards would not have run on the device this check is for."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
        try:
            finished = subprocess.run(
                [*command, f"--junitxml={report}", str(TIMING_PATH_TESTS)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            return [_timing_row("pytest", "error", "timed out after 300 s", device)]
        if not report.exists():  # pytest itself failed: missing, or the file did not import
            output = (finished.stdout + finished.stderr).strip().splitlines()
            return [_timing_row("pytest", "error", " | ".join(output[-3:]), device)]
        return [_junit_row(case, device) for case in ElementTree.parse(report).iter("testcase")]


def _junit_row(case: ElementTree.Element, device: str) -> dict:
    for outcome in ("failure", "error", "skipped"):
        found = case.find(outcome)
        if found is not None:
            return _timing_row(case.get("name", "?"), outcome, found.get("message", ""), device)
    return _timing_row(case.get("name", "?"), "passed", "", device)


def _timing_row(test: str, outcome: str, detail: str, device: str) -> dict:
    ok = outcome == "passed" or (outcome == "skipped" and not device.startswith("cuda"))
    return {"test": test, "outcome": outcome, "detail": detail, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("kvh-out") / "gpu_check.json")
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--cpu-interpret",
        action="store_true",
        help="run on CPU with interpreted kernels and a tiny subset (tests, no GPU)",
    )
    arguments = parser.parse_args(argv)
    device = "cpu" if arguments.cpu_interpret else arguments.device
    if arguments.cpu_interpret:
        # Before the kernels are first imported (lazily, by
        # the first triton pool): see triton_mode.py.
        os.environ["TRITON_INTERPRET"] = "1"
    reason = unavailable_reason(device)
    if reason:
        print(f"gpu_check: device {device} is not available: {reason}", file=sys.stderr)
        return 2
    if arguments.cpu_interpret:
        cells, dtypes, names = (
            [(MHA.name, "plain"), (MLA.name, "plain_mla")],
            ["fp8_e4m3"],
            {"scaled-float"},
        )
    else:
        cells, dtypes, names = all_cells(), list(DTYPES), None
    started = time.perf_counter()
    rules = division_rules(device)
    results = differential(device, cells, dtypes, names)
    timing = timing_paths(device)
    passed = (
        all(rule["ok"] for rule in rules)
        and all(cell["ok"] for cell in results)
        and all(row["ok"] for row in timing)
    )
    write_json_atomic(
        arguments.out,
        {
            "device": device,
            "torch": torch.__version__,
            "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "passed": passed,
            "seconds": round(time.perf_counter() - started, 1),
            "division_rules": rules,
            "scenarios": results,
            "timing_paths": timing,
        },
    )
    bad_rules = [r for r in rules if not r["ok"]]
    bad_cells = [c for c in results if not c["ok"]]
    bad_timing = [row for row in timing if not row["ok"]]
    for rule in bad_rules:
        print(f"RULE MISMATCH {rule}")
    for cell in bad_cells:
        print(
            f"FINDING {cell['pool']} {cell['dtype']} {cell['scenario']}: "
            f"{cell['triton_vs_torch'] or cell['triton_vs_reference']}"
        )
    for row in bad_timing:
        print(f"TIMING PATH {row['test']}: {row['outcome']} {row['detail']}")
    print(
        f"gpu_check on {device}: {len(rules) - len(bad_rules)}/{len(rules)} division rules, "
        f"{len(results) - len(bad_cells)}/{len(results)} scenarios, "
        f"{len(timing) - len(bad_timing)}/{len(timing)} timing-path tests ok; "
        f"results: {arguments.out}"
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
