"""The pool kinds beyond SGLang's token-major rows, declared as data.

For each kind: its record (pools/kinds/layout.py: its name, and the class name the SUT module
exposes, SGLang's spelling where SGLang has the class; HND and aiter's 5-D are SGLang's
MHATokenToKVPool under an environment switch, so the builtin names them apart), the storage that
owns its buffers, the era class it extends, and its layout (the capability matrix's axis). How
its buffers read as slot rows is its record's (pools/kinds/layer_buffers.py), not the builtin's.
"""

from __future__ import annotations

from dataclasses import dataclass

from pools.builtin.fp4.fp4_storage import MHAFP4Storage, MLAFP4Storage
from pools.builtin.layouts.cpu_fp8 import CPUFP8Storage
from pools.builtin.layouts.layout_storage import Aiter5DStorage, HNDStorage
from pools.builtin.layouts.npu import NPUMHAStorage, NPUMLAStorage
from pools.builtin.layouts.unified import UnifiedMHAStorage, UnifiedMLAStorage
from pools.kinds.layout import (
    MHA_AITER5D,
    MHA_CPU_FP8,
    MHA_FP4,
    MHA_HND,
    MLA_FP4,
    NPU_MHA,
    NPU_MLA,
    UNIFIED_MHA,
    UNIFIED_MLA,
)
from pools.kinds.registry import KINDS
from pools.kinds.spec import PoolKind


@dataclass(frozen=True)
class LayoutKind:
    record: PoolKind  # its record (pools/kinds/layout.py): its name and SGLang class
    storage: type
    era_class: str  # MHATokenToKVPool or MLATokenToKVPool
    layout: str  # the capability matrix's layout axis
    fp4: bool = False
    # The only geometry dtypes its cells are planned with: an FP4 pool stores packed e2m1 whatever
    # the caller's (bf16 alone), a CPU server quantizes its cache only in fp8_e4m3; () where any
    # layout dtype is one.
    dtypes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.record.name

    @property
    def class_name(self) -> str:
        return self.record.sglang_class

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


BF16 = ("bf16",)
LAYOUT_KINDS: dict[str, LayoutKind] = {
    kind.kind: kind
    for kind in (
        LayoutKind(MHA_FP4, MHAFP4Storage, "MHATokenToKVPool", "nhd", fp4=True, dtypes=BF16),
        LayoutKind(MLA_FP4, MLAFP4Storage, "MLATokenToKVPool", "nhd", fp4=True, dtypes=BF16),
        LayoutKind(MHA_HND, HNDStorage, "MHATokenToKVPool", "hnd"),
        LayoutKind(NPU_MHA, NPUMHAStorage, "MHATokenToKVPool", "npu"),
        LayoutKind(NPU_MLA, NPUMLAStorage, "MLATokenToKVPool", "npu"),
        LayoutKind(MHA_AITER5D, Aiter5DStorage, "MHATokenToKVPool", "aiter5d"),
        LayoutKind(UNIFIED_MHA, UnifiedMHAStorage, "MHATokenToKVPool", "unified"),
        LayoutKind(UNIFIED_MLA, UnifiedMLAStorage, "MLATokenToKVPool", "unified"),
        LayoutKind(MHA_CPU_FP8, CPUFP8Storage, "MHATokenToKVPool", "nhd", dtypes=("fp8_e4m3",)),
    )
}
