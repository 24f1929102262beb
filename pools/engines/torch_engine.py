"""The torch engine: vectorised advanced indexing, on any torch device."""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from pools.engines.base import StoreEngine


class TorchEngine(StoreEngine):
    name = "torch"

    def scatter(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        buffer[loc] = rows

    def scatter_columns(self, buffer: torch.Tensor, loc: torch.Tensor,
                        parts: Sequence[Optional[torch.Tensor]]) -> None:
        column = 0
        for part in parts:
            if part is None or part.shape[-1] == 0:
                continue
            width = part.shape[-1]
            # index_put_ on a column view writes through to the buffer, with no concatenated copy.
            buffer[..., column:column + width][loc] = part
            column += width
