"""SGLang's write-location API, per era: the `KVWriteLoc` dataclasses and `unwrap_write_loc`.

This is SGLang's API surface, not pool logic, so it is written once and shared openly by the builtin
eras (pools/builtin/eras), the judge (pools/judge) and the mutant bases (mutants/base_*). Sharing it
is safe only because tests/test_write_loc_sglang.py drives the installed SGLang's own `KVWriteLoc`
and `unwrap_write_loc` beside these on the same inputs: a slip here is caught against the real code,
not hidden by a copy. What a pool does with the locations it unwraps (SWA routing, translation,
storage) is not here: each of the three writes that on its own.

- bundled (0.5.14, PR #27695): `KVWriteLoc(loc, swa_loc=None)`; unwrap returns (loc, swa_loc).
- current (0.5.15 on; `for_batch`, `for_layer` and `physical` from 0.5.22):
  `KVWriteLoc(loc, swa_loc, full_loc, physical)`; unwrap returns (loc, swa_loc, full_loc).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch


@dataclass
class BundledWriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None


def unwrap_bundled(loc_info: Any) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(loc, swa_loc) of a BundledWriteLoc; a bare loc has no swa_loc."""
    if isinstance(loc_info, BundledWriteLoc):
        return loc_info.loc, loc_info.swa_loc
    return loc_info, None


@dataclass
class CurrentWriteLoc:
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
    ) -> "CurrentWriteLoc":
        """The batch's out_cache_loc, carrying the batch's physical mark."""
        return cls(
            forward_batch.out_cache_loc,
            swa_loc,
            full_loc,
            physical=forward_batch.physical,
        )

    @classmethod
    def for_layer(
        cls,
        forward_batch: Any,
        layer: Any,
        *,
        swa_loc: Optional[torch.Tensor] = None,
        full_loc: Optional[torch.Tensor] = None,
    ) -> "CurrentWriteLoc":
        """The batch's loc, or a cross-attention layer's encoder loc: nothing translates that
        one, so it is never marked physical."""
        if layer.is_cross_attention:
            return cls(forward_batch.encoder_out_cache_loc, swa_loc, full_loc)
        return cls.for_batch(forward_batch, swa_loc=swa_loc, full_loc=full_loc)

    def __post_init__(self) -> None:
        # PR #29460: swa_loc and full_loc are resolved once from the padded out_cache_loc, and
        # piecewise graphs narrow loc later, so both are cut to len(loc), keeping the head.
        tokens = self.loc.shape[0]
        if self.swa_loc is not None and self.swa_loc.shape[0] != tokens:
            self.swa_loc = self.swa_loc[:tokens]
        if self.full_loc is not None and self.full_loc.shape[0] != tokens:
            self.full_loc = self.full_loc[:tokens]


def unwrap_current(
    loc_info: Any,
) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(loc, swa_loc, full_loc) of a CurrentWriteLoc; a bare loc has neither of the others."""
    if isinstance(loc_info, CurrentWriteLoc):
        return loc_info.loc, loc_info.swa_loc, loc_info.full_loc
    return loc_info, None, None
