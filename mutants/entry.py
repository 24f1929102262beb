"""One catalogued mutant, as data: the record mutants/catalog.py lists, and the fault classes
it may name."""

from __future__ import annotations

from dataclasses import dataclass

FAULT_CLASSES = (
    "unwrap",
    "swa-routing",
    "narrowing",
    "scale",
    "layer-id",
    "layout",
    "dtype-cast",
    "cross-attention",
    "translation-cache",
    "cp-gather",
    "draft-commit",
    "dcp-rank",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    fault: str
    era: str
    pools: tuple[str, ...]
    backends: tuple[str, ...]
    models: str
    dtypes: tuple[str, ...] = ("bf16",)
    equivalent: str = ""
    sut: str = ""  # the SUT spec (--sut semantics); default mutants.zoo.<name>

    @property
    def module(self) -> str:
        return self.sut or f"mutants.zoo.{self.name}"
