"""The fixed widths and placements of the kinds whose geometry is not drawn: what SGLang's pool
accepts and nothing else, or the one rank of a group the harness builds. The kinds' buffers and
landing rows (pools/kinds/layer_buffers.py, landing.py) and the scenario model read them."""

from __future__ import annotations

# The rank a page-interleave pool is built as, of a group of PAGE_SHARD_SIZE: rank 0 owns
# logical page 0, so the reach scenario's slot 1 lands on local row 1.
PAGE_SHARD_RANK, PAGE_SHARD_SIZE = 0, 2
# The QSA indexer as the harness builds it: groups of QSA_COMPRESS_RATIO tokens, index keys of
# QSA_INDEX_HEADS heads of QSA_INDEX_HEAD_DIM (two heads, so a transposed head shows).
QSA_COMPRESS_RATIO, QSA_INDEX_HEADS, QSA_INDEX_HEAD_DIM, QSA_TOKEN_TOPK = 4, 2, 32, 16
QSA_PARTS = ("qsa_state", "qsa_ck")  # a full layer's index buffers; "qsa_rope" on the first
# LayerSplitDSATokenToKVPool: the harness builds rank LAYER_SHARD_RANK of LAYER_SHARD_SIZE, so
# the last layers are its peer's (pools/kinds/landing.py owned_layers).
LAYER_SHARD_RANK, LAYER_SHARD_SIZE = 0, 2
# The DSA indexer's keys: pages of DSA_INDEX_PAGE tokens, each page its keys' bytes then their
# scales' bytes.
DSA_INDEX_HEAD_DIM, DSA_INDEX_PAGE = 128, 64
# The fused-draft placement the harness builds: DRAFT_HOST_LAYERS target layers' rows first in
# every entry (never written by the draft), then DRAFT_RUNNERS runners' lanes, each runner all
# of the draft's layers of that sub-pool; the pool is runner DRAFT_RUNNER's, so its lanes start
# past runner 0's and a writer that ignores the lane offset writes another runner's rows.
DRAFT_HOST_LAYERS, DRAFT_RUNNER, DRAFT_RUNNERS = 1, 1, 2
# SGLang's ENTRY_ALIGN_BYTES: a unified pool's slot entry is rounded up to it.
UNIFIED_ENTRY_ALIGN = 32
# DeepSeek V4's main-KV pools: one K-only latent row a token (448 NoPE + 64 RoPE dims) on 64-token
# pages.
DSV4_NOPE_DIM, DSV4_ROPE_DIM, DSV4_PAGE = 448, 64, 64
# MiniMax M3 NVFP4: 128-token pages, 128-wide heads, one index head.
NVFP4_PAGE, NVFP4_HEAD_DIM = 128, 128
NVFP4_PAYLOAD, NVFP4_SCALES = NVFP4_HEAD_DIM // 2, NVFP4_HEAD_DIM // 16  # bytes a head row
