"""Findings grouped by signature, so one cause reads as one row.

A single fault usually fails many checks: every backend, mode, dtype and scenario that reaches
the faulty door. Their headlines (the `detail` column: "[oracle] message at place") differ only
in numbers (layer, slot, byte, token), so a signature is the oracle, the headline with its
numbers folded, and the door: the pool kind written through (the `pool` column; the results
store keeps no finer door, and an exception's headline already names the method that raised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

FOLDED = "#"
# A number standing alone ("slot 32", "-0.25", "1e-3", "(4, 8)"), a hex word ("0x3F00": the
# element a bytes finding decodes), and a buffer's layer index ("L0.k"); digits inside a name
# ("fp8_e4m3", "e2m1", a run id) are part of the name.
NUMBER = re.compile(
    r"(?<![\w.])0x[0-9A-Fa-f]+(?!\w)"
    r"|(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?!\w)|(?<=\bL)\d+(?=\.)"
)
HEADLINE = re.compile(r"\[(?P<oracle>[^\]]+)\]\s*(?P<message>.*)", re.DOTALL)
# What a group lists of where its findings were seen, in this order.
SPREAD_COLUMNS = ("sut", "backend", "mode", "dtype", "era", "engine")


def fold_numbers(text: str) -> str:
    return NUMBER.sub(FOLDED, text)


def _text(value: Any) -> str:
    """A cell as text: missing values (None, NaN) are empty."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


@dataclass(frozen=True, order=True)
class Signature:
    oracle: str  # "" when the headline names none
    message: str  # the headline without its oracle, numbers folded
    door: str  # the pool kind


def signature_of(detail: str, pool: str) -> Signature:
    """The signature of one finding from its headline and pool kind."""
    matched = HEADLINE.fullmatch(detail.strip())
    oracle, message = (matched["oracle"], matched["message"]) if matched else ("", detail.strip())
    return Signature(oracle, fold_numbers(message), pool)


@dataclass(frozen=True)
class FindingGroup:
    signature: Signature
    findings: pd.DataFrame  # the group's rows, in the order they were given

    @property
    def count(self) -> int:
        return len(self.findings)

    @property
    def repro(self) -> str:
        """The repro link of the group's smallest finding (fewest tokens): the quickest to
        read; "" when no finding of the group has one."""
        if "repro_link" not in self.findings:
            return ""
        linked = self.findings[self.findings["repro_link"].map(_text) != ""]
        if linked.empty:
            return ""
        if "tokens" in linked:
            linked = linked.sort_values("tokens", kind="stable", na_position="last")
        return str(linked["repro_link"].iloc[0])

    def spread(self, column: str) -> list[str]:
        """The distinct non-empty values of `column` among the group's findings, sorted."""
        if column not in self.findings:
            return []
        return sorted({_text(v) for v in self.findings[column]} - {""})


def group_findings(findings: pd.DataFrame) -> list[FindingGroup]:
    """One group per signature, the largest first (ties: the one seen first)."""
    if findings.empty:
        return []
    details = findings["detail"] if "detail" in findings else pd.Series("", index=findings.index)
    pools = findings["pool"] if "pool" in findings else pd.Series("", index=findings.index)
    signatures = [signature_of(_text(d), _text(p)) for d, p in zip(details, pools)]
    order = list(dict.fromkeys(signatures))
    groups = [
        FindingGroup(s, findings[[x == s for x in signatures]].reset_index(drop=True))
        for s in order
    ]
    return sorted(groups, key=lambda g: (-g.count, order.index(g.signature)))
