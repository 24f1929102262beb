"""Which builtin scenarios and layout pools each backend runs in the default matrix.

Why backends run a small focused set: docs/notes/backend-focus.md. Why the layout kinds run only
a few dtypes: docs/notes/layout-dtypes.md.
"""

from __future__ import annotations

from backends import skips
from backends.skips import BackendSkip
from scenarios.model import Scenario

BUILTIN_SCENARIOS = (
    "prefill",
    "decode",
    "padded-narrowed",
    "int32-page64",
    "scaled-float",
    "scaled-tensor",
    "small-scaled",
    "small-param-none",
    "small-narrowed",
    "small-decode",
    "small-cross",
)
"""Every name scenarios.builtin.default_scenarios gives (tests/test_backends.py checks it)."""

EXTEND_FOCUS = ("small-scaled", "small-param-none", "small-narrowed", "small-cross")
"""The builtin scenarios a backend runs in extend: every branch of its call sites, two layers."""

FOCUS = {"extend": EXTEND_FOCUS, "extend_ragged": EXTEND_FOCUS, "decode": ("small-decode",)}
"""A backend's default focus per mode (decode has no cross-attention write)."""

PLAIN_FOCUS = {"extend": BUILTIN_SCENARIOS[:6] + ("small-param-none", "small-cross")}
"""`plain` and `plain_mla`: the pool-sized set, plus what the small set adds to it."""

OUT_OF_FOCUS = BackendSkip(
    "out-of-focus",
    "builtin scenarios outside the backend's focus for the mode",
    "the default matrix gives backends small scenarios that reach every branch of their call "
    "sites; loc dtypes, page sizes and long prefills are covered by `plain`",
    skips.never,
)
"""The skip a builtin scenario outside a backend's focus gets; user scenarios always run."""

PLAIN_LAYOUT_KINDS = ("mha_fp4", "mla_fp4", "mha_hnd", "npu_mha", "mha_aiter5d")
"""The layout kinds `plain` writes through set_kv_buffer (npu_mla means (nope, rope) there)."""

PLAIN_MLA_LAYOUT_KINDS = ("mla_fp4", "npu_mla")
"""The layout kinds `plain_mla` writes through its (nope, rope) door."""

LAYOUT_DTYPES = ("bf16", "fp8_e4m3")
"""The storage dtypes the layout kinds run (FP4 pools: bf16 only)."""


@skips.by_cell
def _layout_dtype_outside_subset(scenario: Scenario, mode: str) -> bool:
    g = scenario.geometry
    if g.pool not in PLAIN_LAYOUT_KINDS + PLAIN_MLA_LAYOUT_KINDS:
        return False
    return g.dtype != "bf16" if g.is_fp4 else g.dtype not in LAYOUT_DTYPES


LAYOUT_DTYPE_SUBSET = BackendSkip(
    "layout-dtype-subset",
    "layout pool kinds on dtypes other than bf16 and fp8_e4m3 (FP4: bf16)",
    "the layout kinds test where a slot's bytes land; every cast is covered by the base kinds, and "
    "an FP4 pool's dtype is packed e2m1 whatever the caller's",
    _layout_dtype_outside_subset,
)
"""The skip that keeps the layout kinds to LAYOUT_DTYPES."""
