"""dspark (models/dspark.py 0.5.23): a speculative draft model that writes its context K/V
itself, on an MHA pool, without an attention backend.

Per layer it commits a draft: where the batch carries a commit plan (`cache_loc_2d`, one row of
locs per request, and `commit_lens`), `set_kv_buffer_prefix_valid(layer, cache_loc_2d,
commit_lens, k, v, layer.k_scale, layer.v_scale)`, which writes each row's first commit_lens[r]
tokens; otherwise `set_kv_buffer(layer, KVWriteLoc(cache_loc, physical=True), k, v,
layer.k_scale, layer.v_scale)` (0.5.21: the bare loc, before KVWriteLoc had the physical mark;
keyed on the SUT's KVWriteLoc fields). It runs no cross-attention. A scenario forward with
`commit_lens` is such a plan (its loc split into equal rows).
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.divergences import (
    CHANGED,
    FIXED_LATER,
    SCALED_BYTES,
    KnownDivergence,
    every_forward,
    every_layer,
)
from backends.entry import ValueScope, register_backend
from backends.skips import no_cross_attention
from pools.dtypes import dtype_spec
from pools.kinds.spec import names
from pools.kinds.token_major import MHA
from scenarios.model import Scenario

DSPARK_FOCUS = {
    "extend": ("prefill", "scaled-tensor", "small-scaled", "reach", "prefix-valid")
    + ("prefix-valid-scaled",)
}
"""Both branches: the plain KVWriteLoc write and the draft commit, scaled and not."""


def _scaled_commit(scenario: Scenario, mode: str) -> bool:
    """A scaled draft commit on the way to a cast: where dividing the caller's k/v shows."""
    g = scenario.geometry
    cast = scenario.input_dtype is not None and scenario.input_dtype != g.dtype
    scaled = "none" not in (scenario.k_scale.kind, scenario.v_scale.kind)
    committed = any(f.commit_lens is not None for f in scenario.forwards)
    return committed and scaled and (cast or dtype_spec(g.dtype).is_fp8)


PREFIX_VALID_DIVIDES_CALLER = KnownDivergence(
    "prefix-valid-divides-caller",
    ("current",),
    CHANGED,
    _scaled_commit,
    every_forward,
    every_layer,
    frozenset({"caller_tensors"}),
    SCALED_BYTES,
    "0.5.14 to 0.5.21's set_kv_buffer_prefix_valid divides the caller's k and v in place (every "
    "row, committed or not) before it selects the committed rows; 0.5.22 on selects copies "
    "first and set_kv_buffer divides those, so the caller's tensors are left as they were. "
    "The written bytes are the same; applies to a SUT whose door probes as dividing the caller's",
    evidence="memory_pool.py set_kv_buffer_prefix_valid of the 0.5.21 and 0.5.22 wheels (the "
    "`cache_k.div_(k_scale)` before `index_select` is gone in 0.5.22); no PR names the change",
    doors=("set_kv_buffer_prefix_valid",),
    capability=("prefix_valid_divides_caller", True),
)


def _fp8_commit(scenario: Scenario, mode: str) -> bool:
    committed = any(f.commit_lens is not None for f in scenario.forwards)
    return committed and dtype_spec(scenario.geometry.dtype).is_fp8


PREFIX_VALID_FP8_RECAST = KnownDivergence(
    "prefix-valid-fp8-recast",
    ("current",),
    FIXED_LATER,
    _fp8_commit,
    every_forward,
    every_layer,
    frozenset({"bytes", "value", "exception"}),
    r"written bytes differ|can't be cast to the desired output type Byte",
    "on an fp8 cache, 0.5.14 to 0.5.21's CPU path casts the rows to fp8 and views them as uint8 "
    "before it calls set_kv_buffer, which sees a dtype that is not the pool's and casts again: "
    "unscaled, the uint8 byte values are converted to fp8 (wrong bytes); scaled, the division "
    "of a uint8 tensor raises. 0.5.22 on leave the cast to set_kv_buffer, once",
    evidence="memory_pool.py set_kv_buffer_prefix_valid of the 0.5.21 wheel (`cache_k.to(self."
    "dtype)` and `.view(self.store_dtype)` before `self.set_kv_buffer(..., k_scale, v_scale)`) "
    "and of 0.5.22 (gone); measured on every release 0.5.15 to 0.5.21; no PR names the change",
    doors=("set_kv_buffer_prefix_valid",),
    capability=("prefix_valid_divides_caller", True),
)


@register_backend(
    name="dspark",
    order=97,
    device_type="cuda",
    pool_kinds=names(MHA),
    modes=("extend",),
    eras=("current",),
    focus=DSPARK_FOCUS,
    divergences=(PREFIX_VALID_DIVIDES_CALLER, PREFIX_VALID_FP8_RECAST),
    skips=(no_cross_attention("dspark", "models/dspark.py"),),
    value_scope=ValueScope(
        names(MHA), "the committed tokens' k and v divided by the layer's scales, then cast"
    ),
    writes_draft_commits=True,
    real_code_gap="a model, not an attention backend: the write is in DSparkModel's forward, "
    "which the release driver does not run; the model below runs",
    summary="a draft's commit through set_kv_buffer_prefix_valid(cache_loc_2d, commit_lens), "
    "else set_kv_buffer(KVWriteLoc(cache_loc, physical=True))",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    layer, loc = req.layer, req.forward_batch.out_cache_loc
    commit_lens = req.metadata.commit_lens
    if commit_lens is not None:
        req.pool.set_kv_buffer_prefix_valid(
            layer, loc.view(commit_lens.shape[0], -1), commit_lens, req.k, req.v,
            layer.k_scale, layer.v_scale,
        )  # fmt: skip
        return
    # 0.5.21's dspark passed the bare loc; a KVWriteLoc with the physical mark came after it.
    fields = getattr(getattr(req.api, "KVWriteLoc", None), "__dataclass_fields__", {})
    write_loc = req.api.KVWriteLoc(loc, physical=True) if "physical" in fields else loc
    req.pool.set_kv_buffer(layer, write_loc, req.k, req.v, layer.k_scale, layer.v_scale)
