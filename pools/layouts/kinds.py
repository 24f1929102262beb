"""The pool kinds beyond SGLang's token-major rows, declared as data.

For each kind: the class name the SUT module exposes (SGLang's spelling where SGLang has the
class; HND and aiter's 5-D are SGLang's MHATokenToKVPool under an environment switch, so the
builtin names them apart), the storage that owns its buffers, the era class it extends, and its
buffers: (name suffix, pool attribute, how a layer's buffer becomes (slots, ...) rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from pools.fp4.fp4_storage import MHAFP4Storage, MLAFP4Storage
from pools.layouts.layout_storage import Aiter5DStorage, HNDStorage
from pools.layouts.npu import NPUMHAStorage, NPUMLAStorage, token_rows
from pools.layouts.paged import AITER_K, AITER_V, HND_LAYOUT
from pools.layouts.unified import UnifiedMHAStorage, UnifiedMLAStorage

SlotView = Callable[[torch.Tensor], torch.Tensor]


def _rows(buffer: torch.Tensor) -> torch.Tensor:
    return buffer


@dataclass(frozen=True)
class LayoutKind:
    kind: str
    class_name: str
    storage: type
    era_class: str  # MHATokenToKVPool or MLATokenToKVPool
    buffers: tuple[tuple[str, str, SlotView], ...]
    layout: str  # the capability matrix's layout axis
    fp4: bool = False

    @property
    def is_mla(self) -> bool:
        return self.era_class == "MLATokenToKVPool"


# The SGLang class each pool kind is built from (harness/run/pool_factory.py builds them).
BASE_CLASSES = {
    "mha": "MHATokenToKVPool",
    "mla": "MLATokenToKVPool",
    "swa_mha": "SWAKVPool",
    "swa_mla": "SWAKVPool",
    "hybrid_linear_mha": "HybridLinearKVPool",
    "hybrid_linear_mla": "HybridLinearKVPool",
    "hybrid_linear_dsa": "HybridLinearKVPool",
    "minimax_sparse": "MiniMaxSparseKVPool",
    "minimax_m3_nvfp4": "MiniMaxM3Nvfp4KVPool",
    "hisparse_mha": "HiSparseMHAMainPool",
    "hisparse_dsa": "HiSparseDSATokenToKVPool",
    "page_interleave_mha": "PageInterleaveMHATokenToKVPool",
    "page_interleave_mla": "PageInterleaveMLATokenToKVPool",
    "page_interleave_dsa": "PageInterleaveDSATokenToKVPool",
    "layer_split_dsa": "LayerSplitDSATokenToKVPool",
    "qsa": "QSATokenToKVPool",
    "swa_unified": "UnifiedSWAKVPool",
    "swa_unified_draft": "UnifiedDraftSWAKVPool",
    "swa_dsa": "SWAKVPool",
    "dsv4_indexer": "DeepSeekV4IndexerPool",
    "dsv4": "DeepSeekV4SingleKVPool",
    "dsv4_uniform_fp8": "DeepSeekV4UniformFP8KVPool",
    "dsv4_hisparse_c4": "HiSparseC4DevicePool",
}


def class_name_of(pool: str) -> str:
    """The SGLang class a SUT must offer for `pool` cells."""
    kind = LAYOUT_KINDS.get(pool)
    return kind.class_name if kind is not None else BASE_CLASSES[pool]


# The kinds that serve the current era's call sites only (every other kind serves every era);
# a kind's ground truth is the first era it serves. The unified pools' locs carry the physical
# mark and the hybrid linear pools read KVWriteLoc.full_loc: only the current era has either,
# and no older call site ever wrote such a pool. The MiniMax sparse pool is the current
# release's (its dense layers take the current KVWriteLoc), as is the MiniMax M3 NVFP4 pool
# (0.5.23 only: its byte-copy doors take a bare loc), the HiSparse and page-interleave pools
# unwrap the current era's three-field loc, and the QSA pool is a hybrid linear one; the unified
# SWA pools' sub-pools (the target's and a fused draft's) are the unified MHA pool's; a SWA pool
# takes a class per side (a DSA full side) from 0.5.21, in the current era. The DeepSeek V4
# pools, the indexer's too, take a bare loc from the current release's DeepSeekV4TokenToKVPool
# routes.
KIND_ERAS = {
    "unified_mha": ("current",),
    "unified_mla": ("current",),
    "hybrid_linear_mha": ("current",),
    "hybrid_linear_mla": ("current",),
    "hybrid_linear_dsa": ("current",),
    "minimax_sparse": ("current",),
    "minimax_m3_nvfp4": ("current",),
    "hisparse_mha": ("current",),
    "hisparse_dsa": ("current",),
    "page_interleave_mha": ("current",),
    "page_interleave_mla": ("current",),
    "page_interleave_dsa": ("current",),
    "layer_split_dsa": ("current",),
    "qsa": ("current",),
    "swa_unified": ("current",),
    "swa_unified_draft": ("current",),
    "swa_dsa": ("current",),
    "dsv4_indexer": ("current",),
    "dsv4": ("current",),
    "dsv4_uniform_fp8": ("current",),
    "dsv4_hisparse_c4": ("current",),
}


def served_eras(pool: str, eras: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `eras` whose call sites a pool of kind `pool` serves, in their order."""
    served = KIND_ERAS.get(pool)
    if served is None:
        return eras
    return tuple(era for era in eras if era in served)


LAYOUT_KINDS: dict[str, LayoutKind] = {
    kind.kind: kind
    for kind in (
        LayoutKind(
            "mha_fp4",
            "MHATokenToKVPoolFP4",
            MHAFP4Storage,
            "MHATokenToKVPool",
            (
                ("k", "k_buffer", _rows),
                ("v", "v_buffer", _rows),
                ("k_scale", "k_scale_buffer", _rows),
                ("v_scale", "v_scale_buffer", _rows),
            ),
            "nhd",
            fp4=True,
        ),
        LayoutKind(
            "mla_fp4",
            "MLATokenToKVPoolFP4",
            MLAFP4Storage,
            "MLATokenToKVPool",
            (("kv", "kv_buffer", _rows), ("kv_scale", "kv_scale_buffer", _rows)),
            "nhd",
            fp4=True,
        ),
        LayoutKind(
            "mha_hnd",
            "MHATokenToKVPoolHND",
            HNDStorage,
            "MHATokenToKVPool",
            (("k", "k_buffer", HND_LAYOUT.slot_view), ("v", "v_buffer", HND_LAYOUT.slot_view)),
            "hnd",
        ),
        LayoutKind(
            "npu_mha",
            "NPUMHATokenToKVPool",
            NPUMHAStorage,
            "MHATokenToKVPool",
            (("k", "k_buffer", token_rows), ("v", "v_buffer", token_rows)),
            "npu",
        ),
        LayoutKind(
            "npu_mla",
            "NPUMLATokenToKVPool",
            NPUMLAStorage,
            "MLATokenToKVPool",
            (("nope", "k_buffer", token_rows), ("rope", "v_buffer", token_rows)),
            "npu",
        ),
        LayoutKind(
            "mha_aiter5d",
            "MHATokenToKVPoolAiter5D",
            Aiter5DStorage,
            "MHATokenToKVPool",
            (("k", "k_buffer", AITER_K.slot_view), ("v", "v_buffer", AITER_V.slot_view)),
            "aiter5d",
        ),
        LayoutKind(
            "unified_mha",
            "UnifiedMHATokenToKVPool",
            UnifiedMHAStorage,
            "MHATokenToKVPool",
            (("k", "k_buffer", _rows), ("v", "v_buffer", _rows)),
            "unified",
        ),
        LayoutKind(
            "unified_mla",
            "UnifiedMLATokenToKVPool",
            UnifiedMLAStorage,
            "MLATokenToKVPool",
            (("kv", "kv_buffer", _rows),),
            "unified",
        ),
    )
}
