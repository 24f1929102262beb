"""dots3 (models/dots3_common/modeling.py, the dots.note hybrid of DSA and sliding-window MLA
layers): the model writes its own latent rows and calls attention with save_kv_cache=False, so
the write site is the model's, whatever attention backend (DotsHybridAttnBackend) then reads.

Every layer calls `set_mla_kv_buffer(attn_mqa, self._get_kv_write_loc(forward_batch), k_nope,
k_pe)` with `KVWriteLoc.for_batch(forward_batch, swa_loc=swa_loc)`: a sliding-window layer's
swa_loc is the SWA backend's `forward_metadata.swa_out_cache_loc` (out_cache_loc translated
through the pool where its length differs), a DSA layer's None. Before that a DSA layer's indexer
stores its keys (dsa_indexer.py, as on every DSA pool: backends/dsa_indexer.py). The pool is
kv_cache_configurator's `_build_hybrid_mla_swa_kv_pool`: a SWAKVPool whose full side is a
DSATokenToKVPool and SWA side an MLATokenToKVPool (the `swa_dsa` kind).
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.dsa import DSA_PLACEMENT_DTYPES, DSA_PLACEMENT_REASON
from backends.dsa_indexer import store_index_keys
from backends.entry import ValueScope, register_backend
from backends.era_calls import FOR_BATCH, decoder_swa, write_loc
from backends.plain import PLAIN_FOCUS
from scenarios.model import SWA_DSA_KINDS


@register_backend(
    name="dots3",
    order=99,
    device_type="cuda",
    pool_kinds=SWA_DSA_KINDS,
    modes=("extend",),  # decode makes the same call (_get_kv_write_loc), on fewer tokens
    eras=("current",),
    focus={"extend": PLAIN_FOCUS["extend"]},
    kind_dtypes=DSA_PLACEMENT_DTYPES,
    kind_dtypes_reason=DSA_PLACEMENT_REASON,
    value_scope=ValueScope(SWA_DSA_KINDS, "nope ++ rope cast, no scales"),
    summary="the model's own set_mla_kv_buffer(layer, KVWriteLoc.for_batch(swa_loc=SWA layers' "
    "swa_out_cache_loc), k_nope, k_pe) after the DSA indexer's key store on DSA layers",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    store_index_keys(req)  # the DSA layers' indexer, before attention
    sliding = req.layer.sliding_window_size > 0
    loc, _ = write_loc(
        req,
        era,
        loc=req.forward_batch.out_cache_loc,
        swa_loc=decoder_swa(req) if sliding else None,
        current=FOR_BATCH,
    )
    req.pool.set_mla_kv_buffer(req.layer, loc, req.k, req.k_rope)
