"""How each era spells 'write these tokens': the loc argument, the keywords and the scales.

Every backend module builds its call on this, so the era conventions live in one place and a
backend module only says which loc, which SWA loc, which KVWriteLoc constructor and which
scales its call site used.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Optional

import torch

from backends.context import WriteRequest
from backends.write_loc_fields import write_loc_fields

# How a 0.5.23 call site builds its KVWriteLoc: for_layer (cross-attention aware, physical),
# for_batch (out_cache_loc only, physical), or a bare KVWriteLoc(loc, swa_loc) (never physical).
FOR_LAYER, FOR_BATCH, BARE = "for_layer", "for_batch", "bare"


def loc_arguments(req: WriteRequest, era: str, *, per_layer: bool = True) -> tuple[Any, dict]:
    """The canonical call (the `plain` backend): the encoder loc paired with its own SWA loc, and
    in the current era the scenario's stale full_loc where it has one and the SUT's KVWriteLoc
    carries the field (triton 0.5.15-0.5.20 passed `full_loc=` from a capture-stable buffer)."""
    full_loc = req.metadata.full_loc
    return write_loc(
        req,
        era,
        loc=req.cache_loc(),
        swa_loc=req.swa_loc(),
        current=FOR_LAYER if per_layer else FOR_BATCH,
        full_loc=full_loc if full_loc is not None and _takes_full_loc(req) else None,
    )


def _takes_full_loc(req: WriteRequest) -> bool:
    """Whether the SUT has a KVWriteLoc with a third field, the full loc (a legacy or kwarg SUT
    has no KVWriteLoc): what it offers, never its version or its names."""
    cls = getattr(req.api, "KVWriteLoc", None)
    return cls is not None and len(write_loc_fields(cls)) >= 3


@functools.cache  # read once per SUT class, not once per write
def _loc_keywords(write_loc: type, constructor: str) -> tuple[str, ...]:
    """The keywords `write_loc.constructor` (for_layer, for_batch) takes the SWA and full locs
    by, named as the SUT names them: its KVWriteLoc's second and third fields where the
    constructor takes those names, else its keyword-only parameters in order (0.5.23: swa_loc,
    full_loc). A release that renames a field with every reader is driven as it ships."""
    parameters = inspect.signature(getattr(write_loc, constructor)).parameters
    fields = write_loc_fields(write_loc)[1:3]
    names = tuple(name for name in fields if name in parameters)
    if len(names) < len(fields):
        names = tuple(p.name for p in parameters.values() if p.kind is p.KEYWORD_ONLY)[:2]
    return names


def decoder_swa(req: WriteRequest, *, cross: str = "paired") -> Optional[torch.Tensor]:
    """The SWA loc a backend passes: `forward_metadata.swa_out_cache_loc`, translated once from
    the decoder's padded out_cache_loc. From 0.5.13 fa3, flashinfer, xpu, musa and torch_native
    pair it with encoder_out_cache_loc on cross-attention layers (cross="paired"); intel_amx and
    ascend pass None there (cross="dropped")."""
    if cross == "dropped" and req.layer.is_cross_attention:
        return None
    return req.metadata.swa_out_cache_loc


def write_loc(
    req: WriteRequest,
    era: str,
    *,
    loc: torch.Tensor,
    swa_loc: Optional[torch.Tensor],
    current: str = FOR_LAYER,
    full_loc: Optional[torch.Tensor] = None,
) -> tuple[Any, dict]:
    """The loc positional argument and extra keywords for `era`.

    legacy passes the bare loc (the SWA pool translates); kwarg adds `swa_loc=` only on a SWA pool
    (other pools reject the keyword) and only when the site has one; bundled wraps
    KVWriteLoc(loc, swa_loc); current builds it the way `current` names, with `full_loc` where
    the site passes one.
    """
    if era == "legacy":
        return loc, {}
    if era == "kwarg":
        keep = req.use_sliding_window_kv_pool and swa_loc is not None
        return loc, ({"swa_loc": swa_loc} if keep else {})
    if era == "bundled":
        return req.api.KVWriteLoc(loc, swa_loc), {}
    if era == "current":
        # No constructor (0.5.15 to 0.5.21): the release's own sites build it from the same loc.
        if current == BARE or not has_constructor(req, current):
            full = () if full_loc is None else (full_loc,)
            return req.api.KVWriteLoc(loc, swa_loc, *full), {}
        constructor = getattr(req.api.KVWriteLoc, current)
        swa_name, *full_name = _loc_keywords(req.api.KVWriteLoc, current)
        keywords = {swa_name: swa_loc}
        if full_loc is not None:
            keywords[full_name[0]] = full_loc
        if current == FOR_LAYER:
            return constructor(req.forward_batch, req.layer, **keywords), {}
        return constructor(req.forward_batch, **keywords), {}
    raise ValueError(f"unknown era {era!r}")


def has_constructor(req: WriteRequest, current: str) -> bool:
    """Whether the SUT's KVWriteLoc offers the constructor a 0.5.23 site uses (for_layer and
    for_batch came with 0.5.22): what it offers, never its version."""
    return callable(getattr(req.api.KVWriteLoc, current, None))


def bare_loc(req: WriteRequest, era: str, *, loc: torch.Tensor, current: str = FOR_LAYER) -> Any:
    """A site that passed a bare tensor until 0.5.22 built a KVWriteLoc without swa_loc
    (the MLA sites of fa3 and the MLA-only backends); a release without the constructor it uses
    still passes the bare tensor there."""
    if era != "current" or (current != BARE and not has_constructor(req, current)):
        return loc
    return write_loc(req, era, loc=loc, swa_loc=None, current=current)[0]


def scale_args(k_scale: Any, v_scale: Any) -> tuple:
    """Positional scales; a site that passes none leaves the pool's defaults (MHA None, SWA 1.0)."""
    return () if k_scale is None and v_scale is None else (k_scale, v_scale)


def layer_scales(req: WriteRequest) -> tuple:
    return req.layer.k_scale, req.layer.v_scale


def kv_cache_is_fp8(req: WriteRequest) -> bool:
    """What the backends test: the dtype of the layer's key buffer as the pool hands it out."""
    dtype = req.pool.get_key_buffer(req.layer.layer_id).dtype
    return dtype.is_floating_point and dtype.itemsize == 1


def kv_write(
    req: WriteRequest,
    loc: Any,
    keywords: dict,
    k: torch.Tensor,
    v: torch.Tensor,
    scales: tuple = (),
) -> None:
    """pool.set_kv_buffer(layer, loc, k, v[, k_scale, v_scale][, swa_loc=])."""
    req.pool.set_kv_buffer(req.layer, loc, k, v, *scales, **keywords)
