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
from pools.kinds.registry import KINDS
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


def class_name_of(pool: str) -> str:
    """The SGLang class a SUT must offer for `pool` cells (its record's, pools/kinds/)."""
    return KINDS[pool].sglang_class


# The eras whose call sites a kind serves are its record's (pools/kinds/, PoolKind.eras): the
# unified pools' locs carry the physical mark and the hybrid linear pools read KVWriteLoc.full_loc,
# which only the current era has, and no older call site ever wrote such a pool; a kind's ground
# truth is the first era it serves.
def served_eras(pool: str, eras: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `eras` whose call sites a pool of kind `pool` serves, in their order."""
    served = KINDS[pool].eras
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
