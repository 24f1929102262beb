"""Which scenario features a run exercised, per cell: computed from the scenarios checked, so a
nightly job can see what it did not cover."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pandas as pd

from pools.builtin.layouts.kinds import LAYOUT_KINDS
from pools.kinds.landing import page_interleave_row
from pools.kinds.registry import kinds_where
from reports.coverage_section import never_exercised
from reports.markdown import markdown_table
from reports.records import text_of
from reports.schema import validate_row
from scenarios.model import (
    DSA_INDEX_KINDS,
    DSV4_INDEXER_KINDS,
    DSV4_KINDS,
    FULL_LOC_KINDS,
    MLA_POOL_KINDS,
    NVFP4_PAGE_ROW_KINDS,
    POOL_KINDS,
    QSA_KINDS,
    SCALE_KINDS,
    SPARSE_INDEX_KINDS,
    Scenario,
)


def _written(s: Scenario) -> set[int]:
    """The slots written, but slot 0; a page-interleave rank's own rows (its ids are twice as
    high, and its peers' are not written)."""
    slots = {
        slot for f in s.forwards for slot in f.loc[: f.tokens] + (f.encoder_loc or [])[: f.tokens]
    }
    if s.geometry.kind.page_interleave:
        slots = {page_interleave_row(s.geometry, slot) for slot in slots} - {None}
    return slots - {0}


def _last_slot(s: Scenario) -> int:
    return s.geometry.size + s.geometry.page_size - 1


def _v_head_dim_differs(s: Scenario) -> bool:
    g = s.geometry
    return not g.kind.latent and g.v_head_dim is not None and g.v_head_dim != g.head_dim


def _shared_storage(s: Scenario) -> bool:
    """Two forwards view one loc tensor (reuse across forwards, or micro-batches)."""
    storages = [f.loc_storage for f in s.forwards if f.loc_storage is not None]
    return len(storages) != len(set(storages))


# name -> does the scenario exercise it; the order is the table's
FEATURES: dict[str, Callable[[Scenario], bool]] = {
    "slot 1": lambda s: 1 in _written(s),
    "last slot": lambda s: _last_slot(s) in _written(s),
    "page tail": lambda s: (
        s.geometry.page_size > 1
        and any(slot % s.geometry.page_size == s.geometry.page_size - 1 for slot in _written(s))
    ),
    "padding": lambda s: any(0 in f.loc for f in s.forwards),
    "narrowing": lambda s: any(f.narrow is not None for f in s.forwards),
    "cross-attention": lambda s: any(f.cross_layers for f in s.forwards),
    "k_scale != v_scale": lambda s: s.k_scale != s.v_scale,
    "int32 locs": lambda s: s.loc_dtype == "int32",
    "head_dim % 64": lambda s: not s.geometry.kind.latent and s.geometry.head_dim % 64 != 0,
    "v_head_dim != head_dim": _v_head_dim_differs,
    "loc view": lambda s: any(f.loc_storage is not None for f in s.forwards),
    "shared loc storage": _shared_storage,
    "remap": lambda s: any(f.remap is not None for f in s.forwards),
    "layer subset": lambda s: any(f.layers is not None for f in s.forwards),
    "stray swa_loc": lambda s: s.stray_swa_loc,
    "stale full_loc": lambda s: s.stale_full_loc,
    "NaN padding at slot 0": lambda s: (
        s.nan_padding and any(0 in forward.loc[: forward.tokens] for forward in s.forwards)
    ),
    "unmarked loc": lambda s: s.unmarked_loc,
    "extreme/special values": lambda s: s.values != "normal",
}


_SWA_KINDS = kinds_where(lambda kind: kind.swa)
_FP4_KINDS = kinds_where(lambda kind: kind.fp4)
_AITER_5D_KINDS = tuple(name for name, kind in LAYOUT_KINDS.items() if kind.layout == "aiter5d")
# MHA pools that store k and v alike (FP4, hybrid linear, HiSparse, MiniMax sparse, QSA and
# NVFP4 page rows), beside the MLA pools that have no v_head_dim.
_NO_V_HEAD_DIM = kinds_where(
    lambda kind: (
        kind.latent
        or kind.fp4
        or kind.linear_layers
        or kind.hisparse
        or kind.sparse_index
        or kind.nvfp4_page_rows
    )
)

# Features the harness never draws in a pool kind, and why: shown as "n/a" (unless a scenario,
# a user's, exercised it after all), never as a gap to fill. feature -> (pool kinds, why)
UNREACHABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "slot 1": (
        (*_AITER_5D_KINDS, *DSA_INDEX_KINDS, *QSA_KINDS, *DSV4_KINDS, *NVFP4_PAGE_ROW_KINDS),
        "aiter's 5-D pages hold at least 16 slots, a DSA or DeepSeek V4 pool's 64, a QSA pool's a "
        "multiple of its compress ratio (4) and a MiniMax M3 NVFP4 pool's 128, and page 0 is the "
        "padding sink, so slot 1 is never handed out",
    ),
    "extreme/special values": (
        _FP4_KINDS,
        "past the format's range after scaling, or special, a value makes its block non-finite, "
        "which has no FP4 scale (SGLang casts inf to uint8): the declared skip fp4-non-finite",
    ),
    "cross-attention": (
        MLA_POOL_KINDS + SPARSE_INDEX_KINDS + QSA_KINDS + NVFP4_PAGE_ROW_KINDS,
        "encoder-decoder models have no MLA layers, no MiniMax sparse and no QSA layers: "
        "cross-attention is drawn on the other MHA pools",
    ),
    "head_dim % 64": (
        MLA_POOL_KINDS + NVFP4_PAGE_ROW_KINDS,
        "an MLA pool has no head_dim, and a MiniMax M3 NVFP4 pool's is 128",
    ),
    "v_head_dim != head_dim": (
        _NO_V_HEAD_DIM,
        "an MLA pool has no v_head_dim, and the FP4, hybrid linear, HiSparse, MiniMax sparse, "
        "QSA and MiniMax M3 NVFP4 MHA pools store k and v alike",
    ),
    "stale full_loc": (
        FULL_LOC_KINDS + DSV4_INDEXER_KINDS,
        "a hybrid linear or unified SWA pool writes at full_loc by design (the skip "
        "full-loc-by-design), and the QSA and DeepSeek V4 indexer call sites pass a bare loc",
    ),
    "remap": (
        tuple(kind for kind in POOL_KINDS if kind not in _SWA_KINDS),
        "only a hybrid pool has a full-to-SWA mapping to change",
    ),
    "stray swa_loc": (_SWA_KINDS, "a hybrid pool's swa_loc is its own, never junk"),
    "layer subset": (
        POOL_KINDS,
        "exploration never draws it: a serving forward writes every layer of its pool; only a "
        "scenario file's Forward.layers does",
    ),
}


# A scale kind's feature name: `scale KIND` (reports/schema.py, the coverage kind).
SCALE_PREFIX = "scale "


def unreachable(feature: str, pool: str) -> str:
    """Why the harness never draws `feature` in `pool` ("" when it can)."""
    pools, why = UNREACHABLE.get(feature, ((), ""))
    return why if pool in pools else ""


def max_slot_bucket(slot: int) -> str:
    """The largest power of two at or below `slot`, as 2^k ("-" for none)."""
    return f">=2^{slot.bit_length() - 1}" if slot > 0 else "-"


class Coverage:
    """Features per (pool, dtype, backend, mode) cell, fed one checked scenario at a time; each
    feature and scale kind counts the scenarios that exercised it."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str, str, str], dict] = {}
        self._seen: set[tuple[tuple[str, str, str, str], int]] = set()

    def add(self, cell: tuple[str, str, str, str], scenario: Scenario) -> None:
        if (cell, id(scenario)) in self._seen:  # one row per candidate: count the scenario once
            return
        self._seen.add((cell, id(scenario)))
        row = self.cells.setdefault(
            cell, {"scenarios": 0, "max_slot": 0, "scales": Counter(), "features": Counter()}
        )
        row["scenarios"] += 1
        row["max_slot"] = max(row["max_slot"], max(_written(scenario), default=0))
        row["scales"].update({scenario.k_scale.kind, scenario.v_scale.kind})
        row["features"].update(name for name, exercised in FEATURES.items() if exercised(scenario))

    def rows(self) -> list[dict]:
        """`coverage` records (reports/schema.py): one per cell and feature, every feature and
        scale kind included, so an uncovered one is a row counting 0 scenarios."""
        return [
            validate_row(
                "coverage",
                {
                    "pool": pool,
                    "dtype": dtype,
                    "backend": backend,
                    "mode": mode,
                    "feature": feature,
                    "scenarios": count,
                    "checked": row["scenarios"],
                    "max_slot": row["max_slot"],
                    "max_slot_bucket": max_slot_bucket(row["max_slot"]),
                    "unreachable": unreachable(feature, pool),
                },
            )
            for (pool, dtype, backend, mode), row in self.cells.items()
            for feature, count in [
                *((name, row["features"][name]) for name in FEATURES),
                *((f"{SCALE_PREFIX}{kind}", row["scales"][kind]) for kind in SCALE_KINDS),
            ]
        ]

    def markdown(self) -> str:
        return coverage_markdown(pd.DataFrame(self.rows()))


def coverage_markdown(rows: pd.DataFrame) -> str:
    """The summary's coverage section from `coverage` records (Coverage.rows, or the rows a run
    stored): one line per cell, in the order the rows give the cells."""
    cells: dict[tuple[str, str, str, str], dict] = {}
    for row in rows.to_dict("records"):
        cell = cells.setdefault(
            (row["pool"], row["dtype"], row["backend"], row["mode"]),
            {"checked": row["checked"], "bucket": row.get("max_slot_bucket"), "exercised": set()},
        )
        if int(row["scenarios"]) > 0:
            cell["exercised"].add(row["feature"])
    frame = pd.DataFrame(
        [
            {
                "pool": pool,
                "dtype": dtype,
                "backend": backend,
                "mode": mode,
                "scenarios": str(int(cell["checked"])),
                "max slot": text_of(cell["bucket"]) or "-",
                "scale kinds": ",".join(
                    sorted(
                        feature.removeprefix(SCALE_PREFIX)
                        for feature in cell["exercised"]
                        if feature.startswith(SCALE_PREFIX)
                    )
                ),
                **{name: _mark(name, pool, cell["exercised"]) for name in FEATURES},
            }
            for (pool, dtype, backend, mode), cell in cells.items()
        ]
    )
    pools = {pool for pool, _, _, _ in cells}
    notes = [
        f"- n/a: {feature} in {', '.join(sorted(pools & set(kinds)))}: {why}"
        for feature, (kinds, why) in UNREACHABLE.items()
        if pools & set(kinds)
    ]
    never = never_exercised(rows) if len(rows) else []
    return (
        "## Coverage: scenario features exercised per cell\n\n"
        + f"Not exercised in any cell that can: {', '.join(never) or 'none'}.\n\n"
        + markdown_table(frame, empty="(no scenario checked)")
        + "\n"
        + "".join(f"{note}\n" for note in notes)
    )


def _mark(feature: str, pool: str, exercised: set[str]) -> str:
    if feature in exercised:
        return "x"
    return "n/a" if unreachable(feature, pool) else ""
