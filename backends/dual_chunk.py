"""dual_chunk (layers/attention/dual_chunk_flashattention_backend.py 0.5.12-0.5.14, CUDA: dual
chunk attention (DCA) for Qwen2.5-1M's long contexts; the file is gone by 0.5.23).

Extend and decode write `set_kv_buffer(layer, forward_batch.out_cache_loc, key, value,
layer.k_scale, layer.v_scale)` when key and value are given and save_kv_cache: the bare loc in
every release that has the file, the layer's scales always passed, no SWA loc (plain MHA pools
only, as torch_flex), no encoder loc (cross-attention layers would be written at the decoder's
loc: a skip). `key` is k viewed as (tokens, kv heads, head size), the same elements. 0.5.12
writes through forward_batch.token_to_kv_pool, 0.5.13 and 0.5.14 through the pool it keeps.

Not modelled: with a DCA config whose original_max_position_embeddings is above 0, extend
multiplies each request's keys in place by its metadata's scaling_factor before the write (the
metadata is built by init_forward_metadata from the requests' positions); the builtin scenarios
carry no DCA config, which is the 0 (no scaling) of a model without one.
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    KV,
    LAYER_SCALES,
    CallSiteModel,
    Shape,
    branch,
    eras_branches,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.era_calls import kv_write, layer_scales
from backends.skips import no_cross_attention
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

FILE = "dual_chunk_flashattention_backend.py"
ERAS = ("legacy", "kwarg", "bundled")  # 0.5.12 to 0.5.14; 0.5.23 has no such file

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14).
BRANCHES = eras_branches(
    (
        ERAS,
        (
            branch("forward_extend", "key is not None and value is not None", "save_kv_cache"),
            branch("forward_decode", "key is not None and value is not None", "save_kv_cache"),
        ),
    ),
)

CENSUS = CallSiteModel(
    (ATTENTION + FILE,),
    {era: (Shape(KV, "bare", "out_cache_loc", scales=LAYER_SCALES),) for era in ERAS},
    branches=BRANCHES,
)


@register_backend(
    name="dual_chunk",
    order=15,
    census=CENSUS,
    device_type="cuda",
    # Not swa_mha: with no SWA loc, a SWA pool's door raises from 0.5.13 on (as torch_flex's).
    pool_kinds=names(MHA),
    modes=EXTEND_AND_DECODE,
    eras=ERAS,
    dtypes=BF16_AND_FP8,
    # Measured on 0.5.14 with sgl_kernel.sparse_flash_attn stood in (the class imports) and its
    # fields given: both forwards raise ValueError (too many values to unpack (expected 5),
    # dual_chunk_flashattention_backend.py:346 and :457) before the write.
    real_code_gap="its forwards split q into DCA's five query parts (q.shape[-1] // 5: intra, "
    "succ, inter and two critical) before the write, and the release driver hands one query "
    "heads x head_dim wide, so the release class raises ValueError there (0.5.14 line 346 "
    "extend, 457 decode); the census-checked model runs",
    summary="bare out_cache_loc with the layer's scales; MHA without SWA; 0.5.12-0.5.14",
    skips=(no_cross_attention("dual_chunk", FILE + " 0.5.12-0.5.14"),),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    kv_write(req, req.forward_batch.out_cache_loc, {}, req.k, req.v, layer_scales(req))
