"""The FP4 bound oracle: a candidate's dequantised FP4 bytes lie within the e2m1 rounding bound of
what the scenario asked the pool to quantise (harness.compare.expectations.Expected.fp4_inputs).
It never reads the baseline's bytes, so a quantiser wrong the same way in the judge and the
candidate is still caught (docs/pools.md, FP4)."""

from __future__ import annotations

from harness.compare.expectations import Expected
from harness.compare.findings import Finding, locate
from harness.compare.snapshot import Execution
from pools.builtin.fp4.quantiser import dequantize as fp4_dequantize
from pools.builtin.fp4.quantiser import error_bound as fp4_error_bound
from scenarios.model import Scenario


def fp4_bound_findings(
    scenario: Scenario, baseline: Execution, candidate: Execution, expected: Expected
) -> list[Finding]:
    """Dequantised FP4 bytes are within the e2m1 rounding bound of the input: catches a quantiser
    that is wrong the same way in the reference and the candidate."""
    g = scenario.geometry
    if not g.kind.fp4:
        return []
    parts = ("kv",) if g.kind.latent else ("k", "v")
    for layer_id in g.kv_layer_ids:
        for part in parts:
            name = f"L{layer_id}.{part}"
            writers = expected.get(name)
            data, scales = candidate.buffers.get(name), candidate.buffers.get(f"{name}_scale")
            if not writers or data is None or scales is None:
                continue
            slots = expected.slots(name)
            want = expected.fp4_inputs(name, part, layer_id)
            index = expected.slot_index(name)
            got = fp4_dequantize(data[index], scales[index])
            bad = ~((got - want).abs() <= fp4_error_bound(want))
            if bool(bad.any()):
                row, element = (int(i) for i in bad.nonzero()[0])
                writer = writers[slots[row]]
                _, sub_pool, head = locate(scenario, name, element // 2)
                return [
                    Finding(
                        "fp4_bound",
                        f"dequantised FP4 value {float(got[row, element]):g} is "
                        f"not within the e2m1 bound of the input {float(want[row, element]):g}",
                        buffer=name,
                        layer=layer_id,
                        slot=slots[row],
                        head=head,
                        byte_offset=element // 2,
                        mismatched_rows=int(bad.any(1).sum()),
                        written_by=f"forward {writer.forward}, token {writer.token}",
                        forward=writer.forward,
                    )
                ]
    return []
