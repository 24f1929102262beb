"""The layout kinds' builtin pools (pools/builtin/layouts/kinds.py), each registered against its
record: the layout's storage first, for its buffers and bytes, over the era's door class, whose
set_kv_buffer parses the loc."""

from __future__ import annotations

from typing import Any, Callable

from pools.builtin.layouts.kinds import LAYOUT_KINDS, LayoutKind
from pools.kinds.pool_classes import builtin_pool


def _layout_pool(kind: LayoutKind) -> Callable[[Any], type]:
    def pool(module: Any) -> type:
        era_class = getattr(module.era_front, kind.era_class)
        return type(kind.class_name, (kind.storage, era_class), {"engine": module.store_engine})

    return pool


for _kind in LAYOUT_KINDS.values():
    builtin_pool(_kind.record)(_layout_pool(_kind))
