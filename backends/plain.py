"""The plain call site: each era's canonical write, with no backend quirks.

`plain` writes MLA pools through set_kv_buffer (the combined row, no scales); `plain_mla`
through set_mla_kv_buffer (nope and rope as separate tensors).
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.entry import register_backend
from backends.era_calls import loc_arguments
from backends.focus import (
    LAYOUT_DTYPE_SUBSET,
    PLAIN_FOCUS,
    PLAIN_LAYOUT_KINDS,
    PLAIN_MLA_LAYOUT_KINDS,
)
from scenarios.model import BASE_POOL_KINDS


@register_backend(
    name="plain",
    device_type="any",
    pool_kinds=BASE_POOL_KINDS + PLAIN_LAYOUT_KINDS,
    modes=("extend",),
    focus=PLAIN_FOCUS,
    skips=(LAYOUT_DTYPE_SUBSET,),
    mla_input="latent",
    summary="each era's canonical set_kv_buffer call, no backend quirks",
)
def write_set_kv_buffer(req: WriteRequest, era: str, mode: str = "extend") -> None:
    if not req.save_kv_cache:
        return
    loc, keywords = loc_arguments(req, era)
    if req.is_mla:
        # The MLA door takes no scales.
        req.pool.set_kv_buffer(req.layer, loc, req.mla_k, req.v, **keywords)
    else:
        req.pool.set_kv_buffer(
            req.layer, loc, req.k, req.v, req.layer.k_scale, req.layer.v_scale, **keywords
        )


@register_backend(
    name="plain_mla",
    device_type="any",
    pool_kinds=("mla", "swa_mla") + PLAIN_MLA_LAYOUT_KINDS,
    modes=("extend",),
    focus=PLAIN_FOCUS,
    skips=(LAYOUT_DTYPE_SUBSET,),
    summary="each era's canonical set_mla_kv_buffer call (nope, rope)",
)
def write_set_mla_kv_buffer(req: WriteRequest, era: str, mode: str = "extend") -> None:
    if not req.is_mla:
        return write_set_kv_buffer(req, era, mode)
    if not req.save_kv_cache:
        return
    loc, keywords = loc_arguments(req, era)
    req.pool.set_mla_kv_buffer(req.layer, loc, req.k, req.k_rope, **keywords)
