"""Which builtin scenarios and layout dtypes backends run in the default matrix, by default; a
backend module that runs another set declares it beside its entry (backends/plain.py).

Why backends run a small focused set: docs/notes/backend-focus.md. Why the layout kinds run only
a few dtypes: docs/notes/layout-dtypes.md.
"""

from __future__ import annotations

from backends import skips
from backends.skips import BackendSkip
from reports.outcome import SkipKind

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
    "reach",
    "extreme-scaled",
    "special-values",
    "stale-full-loc",
    "nan-padding",
    "unmarked-loc",
    "prefix-valid",
    "prefix-valid-scaled",
    "micro-batches",
    "remap-reuse",
    "pipeline-rank",
    "dcp-rank",
    "dcp-rank-scaled",
    "unsaved-layer",
    "unsaved-layer-decode",
    "dcp-rank-unsaved",
    "cp-floor-scaled",
    "cp-wide-batch",
    "cp-padded-device-lens",
)
"""Every name scenarios.defaults.default_scenarios gives (tests/test_backends.py checks it)."""

LOC_LIVES = ("micro-batches", "remap-reuse")
"""The SWA kinds' loc views, shared loc storage and remaps (scenarios.defaults._loc_lives): every
backend that writes an SWA kind runs them in every mode, since the swa_loc a backend hands the
pool, or the pool's own translation, is what a memo keyed on the loc tensor gets wrong."""

EXTEND_FOCUS = ("small-scaled", "small-param-none", "small-narrowed", "small-cross") + LOC_LIVES
"""The builtin scenarios a backend runs in extend: every branch of its call sites, two layers."""

PIPELINE_RANK = ("pipeline-rank",)
"""A pipeline rank's pool (layers 3 to 6; the kinds whose record says pipeline_rank): every
backend runs it in extend, since the door indexes its layer buffer by the layer the call hands
it, and at layer 0 `layer_id - start_layer` agrees with `+`, `|`, `^` and `>>`. On 0.5.14 only
fa3's call wrote the MLA (nope, rope) door with a loc it unwraps: plain_mla's raises there."""

UNSAVED = {"extend": ("unsaved-layer",), "decode": ("unsaved-layer-decode",)}
"""Forwards that call a layer told not to save (the base kinds): every backend runs them, since
each forward's write hangs on `save_kv_cache` (with `k is not None`), and a flipped test writes
rows that must keep the canary."""

CP_BATCHES = ("cp-floor-scaled", "cp-wide-batch", "cp-padded-device-lens")
"""The batches at a context-parallel strategy's edges (scenarios/cp_batches.py): where its
choice to take a batch through CP turns, one past 256 of its counts, and a padded batch handed its
seq_lens alone. The cp backend runs them in extend."""

FOCUS = {
    "extend": EXTEND_FOCUS + PIPELINE_RANK + UNSAVED["extend"],
    "extend_ragged": EXTEND_FOCUS + PIPELINE_RANK + UNSAVED["extend"],
    "decode": ("small-decode",) + LOC_LIVES + UNSAVED["decode"],
}
"""A backend's default focus per mode (decode has no cross-attention write)."""

OUT_OF_FOCUS = BackendSkip(
    "out-of-focus",
    "builtin scenarios outside the backend's focus for the mode",
    "the default matrix gives backends small scenarios that reach every branch of their call "
    "sites; loc dtypes, page sizes and long prefills are covered by `plain`",
    skips.never,
    kind=SkipKind.BY_DESIGN,
)
"""The skip a builtin scenario outside a backend's focus gets; user scenarios always run."""

LAYOUT_DTYPES = ("bf16", "fp8_e4m3")
"""The storage dtypes the layout kinds run (FP4 pools: bf16 only)."""
