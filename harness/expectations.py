"""Which slots a correct write touches, and which token wrote each: derived from the scenario
alone, never from any pool, so the oracles do not trust the implementations they judge."""
from __future__ import annotations

from dataclasses import dataclass

from harness.execute import buffer_names
from scenarios.materialize import write_slots
from scenarios.model import Scenario

# Slot 0 is the padding sink: padded tokens and unmapped SWA tokens land there, some writers skip
# it (the CUDA store_cache kernel, the MLA Triton kernels), so its bytes are don't-care.
PADDING_SINK = 0


@dataclass(frozen=True)
class Writer:
    forward: int
    token: int


def expected_writes(scenario: Scenario) -> dict[str, dict[int, Writer]]:
    """buffer name -> {slot: the last (forward, token) that writes it}, slot 0 excluded."""
    written: dict[str, dict[int, Writer]] = {}
    for layer_id in range(scenario.geometry.layer_num):
        for name in buffer_names(scenario, layer_id):
            written[name] = {}
    for forward_index, forward in enumerate(scenario.forwards):
        for layer_id in scenario.layers_of(forward):
            slots = write_slots(scenario, forward, layer_id)
            for name in buffer_names(scenario, layer_id):
                for token, slot in enumerate(slots):
                    if slot != PADDING_SINK:
                        written[name][slot] = Writer(forward_index, token)
    return written
