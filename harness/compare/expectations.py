"""Which slots a correct write touches, and which token wrote each: derived from the scenario
alone, never from any pool, so the oracles do not trust the implementations they judge."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import torch

from harness.compare.snapshot import buffer_names
from scenarios.materialize import scale_object, token_tensors
from scenarios.model import Scenario
from scenarios.slots import INDEXER_PARTS, indexer_slots, write_slots

# Slot 0 is the padding sink: padded tokens and unmapped SWA tokens land there, some writers skip
# it (the CUDA store_cache kernel, the MLA Triton kernels), so its bytes are don't-care.
PADDING_SINK = 0


@dataclass(frozen=True)
class Writer:
    forward: int
    token: int


class Expected(Mapping):
    """buffer name -> {slot: the last (forward, token) that writes it}, slot 0 excluded.

    Built once per scenario and shared by the baseline's self-check and every candidate's
    judgement, so what follows from the scenario alone (sorted slots, the mask of slots nobody
    writes, the FP4 inputs) is derived once, on first use, not once per candidate."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self._writers: dict[str, dict[int, Writer]] = {}
        for layer_id in scenario.geometry.kv_layer_ids:
            for name in buffer_names(scenario, layer_id):
                self._writers[name] = {}
        for forward_index, forward in enumerate(scenario.forwards):
            for layer_id in scenario.layers_of(forward):
                kv_slots = write_slots(scenario, forward, layer_id)  # once a layer, not a buffer
                for name in buffer_names(scenario, layer_id):
                    part = name.split(".", 1)[1]
                    slots = (
                        indexer_slots(scenario.geometry, forward, layer_id, part)
                        if part in INDEXER_PARTS
                        else kv_slots
                    )
                    for token, slot in enumerate(slots):
                        if slot is not None and slot != PADDING_SINK:
                            self._writers[name][slot] = Writer(forward_index, token)
        self._slots: dict[str, list[int]] = {}
        self._slot_index: dict[str, torch.Tensor] = {}
        self._untouched: dict[tuple[str, int], torch.Tensor] = {}
        self._fp4_inputs: dict[tuple[str, str, int], torch.Tensor] = {}
        self._memo: dict[tuple, torch.Tensor] = {}

    def __getitem__(self, name: str) -> dict[int, Writer]:
        return self._writers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._writers)

    def __len__(self) -> int:
        return len(self._writers)

    def slots(self, name: str) -> list[int]:
        """The written slots of buffer `name`, ascending."""
        if name not in self._slots:
            self._slots[name] = sorted(self._writers[name])
        return self._slots[name]

    def slot_index(self, name: str) -> torch.Tensor:
        """`slots(name)` as an index tensor."""
        if name not in self._slot_index:
            self._slot_index[name] = torch.tensor(self.slots(name), dtype=torch.long)
        return self._slot_index[name]

    def untouched(self, name: str, rows: int) -> torch.Tensor:
        """Mask of the rows of a `rows`-row buffer `name`
        that no token writes, the sink excluded."""
        key = (name, rows)
        if key not in self._untouched:
            keep = torch.ones(rows, dtype=torch.bool)
            if rows:  # a buffer of no rows (a layer-split peer's layer) has no sink either
                keep[PADDING_SINK] = False
            keep[[slot for slot in self._writers[name] if slot < rows]] = False
            self._untouched[key] = keep
        return self._untouched[key]

    def memo(self, key: tuple, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """What `compute` derives from the scenario alone, computed once per scenario (the value
        model's rows): the baseline's self-check and every candidate share it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def fp4_inputs(self, name: str, part: str, layer_id: int) -> torch.Tensor:
        """What the pool was asked to quantise for each written slot of `name` (ascending),
        flattened per token: the caller's values divided by the layer's scale in their own dtype
        (MHA), or nope ++ rope (MLA)."""
        key = (name, part, layer_id)
        if key not in self._fp4_inputs:
            self._fp4_inputs[key] = self._quantiser_inputs(name, part, layer_id)
        return self._fp4_inputs[key]

    def _quantiser_inputs(self, name: str, part: str, layer_id: int) -> torch.Tensor:
        scenario, rows, per_forward = self.scenario, [], {}
        scale = scenario.k_scale if part == "k" else scenario.v_scale
        for slot in self.slots(name):
            writer = self._writers[name][slot]
            if writer.forward not in per_forward:
                tensors = token_tensors(scenario, writer.forward, layer_id, "cpu")
                if scenario.geometry.kind.latent:
                    values = torch.cat(
                        [t for t in (tensors["k"], tensors["k_rope"]) if t is not None], -1
                    )
                else:
                    values = tensors[part].clone()
                    scale_value = scale_object(scale, "cpu")
                    if scale_value is not None:
                        values.div_(scale_value)
                per_forward[writer.forward] = values.to(torch.float32).reshape(values.shape[0], -1)
            rows.append(per_forward[writer.forward][writer.token])
        return torch.stack(rows)


def expected_writes(scenario: Scenario) -> Expected:
    return Expected(scenario)
