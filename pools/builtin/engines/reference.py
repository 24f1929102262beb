"""The reference engine: one token at a time, on CPU, so that it is obviously correct."""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from pools.builtin.engines.base import StoreEngine, broadcast_rows, same_rows


class ReferenceEngine(StoreEngine):
    name = "reference"
    devices = ("cpu",)

    def scatter(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        rows = broadcast_rows(loc.shape[0], rows)
        for token, slot in enumerate(loc.tolist()):
            buffer[slot] = rows[token]

    def scatter_columns(
        self, buffer: torch.Tensor, loc: torch.Tensor, parts: Sequence[Optional[torch.Tensor]]
    ) -> None:
        same_rows(loc.shape[0], parts)
        for token, slot in enumerate(loc.tolist()):
            column = 0
            for part in parts:
                if part is None or part.shape[-1] == 0:
                    continue
                width = part.shape[-1]
                buffer[slot, ..., column : column + width] = part[token]
                column += width
