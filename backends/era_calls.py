"""How each era spells 'write these tokens': the loc argument and keywords a call site passes.

Every backend module builds its call on this, so the era conventions live in one place.
"""
from __future__ import annotations

from typing import Any

from backends.context import WriteRequest

ERA_NAMES = ("legacy", "kwarg", "bundled", "current")


def loc_arguments(req: WriteRequest, era: str, *, per_layer: bool = True) -> tuple[Any, dict]:
    """The loc positional argument and extra keywords for `era`.

    legacy passes the bare loc (the SWA pool translates); kwarg adds `swa_loc=` only when the pool
    is a SWA pool (other pools reject the keyword); bundled wraps KVWriteLoc(loc, swa_loc); current
    uses KVWriteLoc.for_layer, or for_batch when the backend has no cross-attention (per_layer=False).
    """
    loc, swa_loc = req.cache_loc(), req.swa_loc()
    if era == "legacy":
        return loc, {}
    if era == "kwarg":
        return loc, ({"swa_loc": swa_loc} if req.use_sliding_window_kv_pool else {})
    if era == "bundled":
        return req.api.KVWriteLoc(loc, swa_loc), {}
    if era == "current":
        if per_layer:
            return req.api.KVWriteLoc.for_layer(req.forward_batch, req.layer, swa_loc=swa_loc), {}
        return req.api.KVWriteLoc.for_batch(req.forward_batch, swa_loc=swa_loc), {}
    raise ValueError(f"unknown era {era!r}")
