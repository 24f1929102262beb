"""A correct SGLang 0.5.23 (`current`) module: KVWriteLoc(loc, swa_loc, full_loc, physical), cut
to len(loc) in __post_init__ (PR #29460), with the for_batch / for_layer constructors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from mutants import base_bundled


@dataclass
class KVWriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None
    full_loc: Optional[torch.Tensor] = None
    physical: bool = False

    @classmethod
    def for_batch(
        cls,
        forward_batch: Any,
        *,
        swa_loc: Optional[torch.Tensor] = None,
        full_loc: Optional[torch.Tensor] = None,
    ) -> "KVWriteLoc":
        return cls(
            forward_batch.out_cache_loc,
            swa_loc,
            full_loc,
            physical=getattr(forward_batch, "out_cache_loc_is_physical", False),
        )

    @classmethod
    def for_layer(
        cls,
        forward_batch: Any,
        layer: Any,
        *,
        swa_loc: Optional[torch.Tensor] = None,
        full_loc: Optional[torch.Tensor] = None,
    ) -> "KVWriteLoc":
        if getattr(layer, "is_cross_attention", False):
            return cls(forward_batch.encoder_out_cache_loc, swa_loc, full_loc)
        return cls.for_batch(forward_batch, swa_loc=swa_loc, full_loc=full_loc)

    def __post_init__(self) -> None:
        n = self.loc.shape[0]
        if self.swa_loc is not None:
            self.swa_loc = self.swa_loc[:n]
        if self.full_loc is not None:
            self.full_loc = self.full_loc[:n]


def unwrap_write_loc(
    loc_info: Any,
) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    if isinstance(loc_info, KVWriteLoc):
        return loc_info.loc, loc_info.swa_loc, loc_info.full_loc
    return loc_info, None, None


class MHATokenToKVPool(base_bundled.MHATokenToKVPool):
    unwrap = staticmethod(unwrap_write_loc)


class MLATokenToKVPool(base_bundled.MLATokenToKVPool):
    unwrap = staticmethod(unwrap_write_loc)


class SWAKVPool(base_bundled.SWAKVPool):
    unwrap = staticmethod(unwrap_write_loc)
    sub_pool_class = MHATokenToKVPool

    def _resolve(self, layer: Any, loc_info: Any) -> torch.Tensor:
        loc, swa_loc, full_loc = self.unwrap(loc_info)
        if self._is_swa_layer(layer):
            assert swa_loc is not None, "a SWA layer needs swa_loc"
            return swa_loc
        return full_loc if full_loc is not None else loc
