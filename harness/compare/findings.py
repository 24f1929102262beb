"""Findings: a failed check, localised to pool, layer, slot,
head, byte and the token that wrote it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping, Optional

import torch

from harness.compare.element_values import element_note
from pools.dtypes import dtype_spec
from scenarios.model import Scenario


@dataclass(frozen=True)
class Finding:
    """Immutable: the same finding may be shared by the runs it describes (a candidate
    byte-identical to its baseline takes the baseline's), so a row names its candidate with
    `for_candidate`, a copy."""

    oracle: str
    message: str
    candidate: str = ""
    buffer: Optional[str] = None  # e.g. "L2.k"
    layer: Optional[int] = None
    sub_pool: Optional[str] = None  # "full" / "swa" for hybrid pools
    slot: Optional[int] = None
    head: Optional[str] = None  # head index, or "nope"/"rope" for MLA rows
    byte_offset: Optional[int] = None
    written_by: Optional[str] = None  # "forward 0, token 5"
    expected: Optional[str] = None  # a few bytes of hex around the first difference
    actual: Optional[str] = None
    mismatched_rows: int = 0
    forward: Optional[int] = None  # the forward that wrote the slot, or that raised
    door: Optional[str] = None  # exceptions: the pool method that raised ("set_kv_buffer")
    # Where the release's own backend code called the write door, when its real code ran.
    release_site: Optional[str] = None
    # The release functions the candidate's writes ran (harness/run/release_trail.py), where a
    # foreign SUT wrote: the place to look when no line raised and no release call site wrote.
    release_trail: Optional[str] = None
    # What the first differing element holds, decoded in the cache dtype, and the input that
    # produced it (harness/compare/element_values.py): "expected bf16 0x3F00 (0.5), wrote ...".
    element: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)

    def for_candidate(self, label: str) -> "Finding":
        return replace(self, candidate=label)

    def headline(self) -> str:
        place = ", ".join(
            part
            for part in (
                self.buffer and f"buffer {self.buffer}",
                self.sub_pool and f"{self.sub_pool} sub-pool",
                self.slot is not None and f"slot {self.slot}",
                self.head is not None and f"head {self.head}",
                self.byte_offset is not None and f"byte {self.byte_offset}",
                self.written_by,
            )
            if part
        )
        site = f" (release code: {self.release_site})" if self.release_site else ""
        ran = f" (release functions run: {self.release_trail})" if self.release_trail else ""
        element = f": {self.element}" if self.element else ""
        return (
            f"[{self.oracle}] {self.message}"
            + (f" at {place}" if place else "")
            + element
            + site
            + ran
        )


MOST_FUNCTIONS_SHOWN = 8


def trail_text(trail: tuple[str, ...]) -> str:
    """A release trail as a finding states it: its first functions, and how many more ran."""
    more = len(trail) - MOST_FUNCTIONS_SHOWN
    return "; ".join(trail[:MOST_FUNCTIONS_SHOWN]) + (f"; {more} more" if more > 0 else "")


def locate(scenario: Scenario, buffer: str, byte_offset: int) -> tuple[Optional[int], str, str]:
    """(layer, sub-pool, head) of a byte offset within one row of `buffer`."""
    g = scenario.geometry
    layer = int(buffer[1:].split(".")[0])
    sub_pool = ("swa" if layer in g.swa_layer_ids else "full") if g.kind.swa else ""
    suffix = buffer.split(".", 1)[1]
    if suffix in ("nope", "rope"):  # NPU MLA keeps them in two buffers
        return layer, sub_pool, suffix
    if g.kind.fp4:  # two values a data byte; one scale byte per 16 values
        element = byte_offset * (16 if suffix.endswith("scale") else 2)
    else:
        element = byte_offset // dtype_spec(g.dtype).store_dtype.itemsize
    if g.kind.latent:
        head = "nope" if element < g.kv_lora_rank else "rope"
    else:
        width = g.head_dim if suffix.startswith("k") else (g.v_head_dim or g.head_dim)
        head = str(element // width)
    return layer, sub_pool, head


# The oracles whose expected row is a value (not the canary), and how their expectation is worded.
ELEMENT_ORACLES = {"bytes": "expected", "value": "torch computes"}


def hex_window(row, offset: int, width: int = 8) -> str:
    return row[offset : offset + width].numpy().tobytes().hex(" ")


def first_difference(
    scenario: Scenario,
    name: str,
    slots: list[int],
    want: torch.Tensor,
    got: torch.Tensor,
    oracle: str,
    message: str,
    expected: Mapping[str, Mapping[int, Any]],
) -> list[Finding]:
    """The first differing row of `got` against `want` (rows of `slots`), localised to its slot,
    head, byte and the (forward, token) that `expected` says last wrote it; [] when equal."""
    differs = (want != got).any(dim=1)
    if not bool(differs.any()):
        return []
    row = int(differs.nonzero()[0])
    offset = int((want[row] != got[row]).nonzero()[0])
    slot = slots[row]
    layer, sub_pool, head = locate(scenario, name, offset)
    writer = expected[name].get(slot)
    element = (
        element_note(
            scenario,
            name,
            want[row],
            got[row],
            offset,
            writer and (writer.forward, writer.token),
            ELEMENT_ORACLES[oracle],
        )
        if oracle in ELEMENT_ORACLES
        else None
    )
    return [
        Finding(
            oracle,
            message,
            buffer=name,
            layer=layer,
            sub_pool=sub_pool or None,
            slot=slot,
            head=head,
            byte_offset=offset,
            written_by=writer and f"forward {writer.forward}, token {writer.token}",
            forward=writer and writer.forward,
            expected=hex_window(want[row], offset),
            actual=hex_window(got[row], offset),
            mismatched_rows=int(differs.sum()),
            element=element,
        )
    ]
