"""The scenario: a JSON-serialisable description of pools and writes, the unit of repro.

Tensors are never stored; scenarios.materialize regenerates them bit-for-bit from `seed`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

POOL_KINDS = ("mha", "mla", "swa_mha", "swa_mla")
SCALE_KINDS = ("none", "float", "tensor", "param")


@dataclass
class Geometry:
    pool: str                      # one of POOL_KINDS
    dtype: str                     # a pools.dtypes name
    size: int                      # allocatable slots of the (full) pool
    page_size: int
    layer_num: int
    head_num: int = 0
    head_dim: int = 0
    v_head_dim: Optional[int] = None
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    swa_layer_ids: list[int] = field(default_factory=list)
    size_swa: int = 0

    @property
    def is_swa(self) -> bool:
        return self.pool.startswith("swa_")

    @property
    def is_mla(self) -> bool:
        return self.pool in ("mla", "swa_mla")

    @property
    def full_layer_ids(self) -> list[int]:
        return [layer for layer in range(self.layer_num) if layer not in self.swa_layer_ids]

    def rows(self, layer_id: int) -> int:
        """Buffer height of the sub-pool that holds `layer_id`."""
        size = self.size_swa if layer_id in self.swa_layer_ids else self.size
        return size + self.page_size


@dataclass
class Scale:
    kind: str = "none"             # one of SCALE_KINDS
    value: float = 1.0


@dataclass
class Forward:
    loc: list[int]                 # the padded out_cache_loc; padding tokens point at slot 0
    narrow: Optional[int] = None   # write only loc[:narrow]; swa_loc still comes from the padded loc
    layers: Optional[list[int]] = None           # None: every layer
    encoder_loc: Optional[list[int]] = None      # cross-attention layers write here
    cross_layers: list[int] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return len(self.loc) if self.narrow is None else self.narrow


@dataclass
class Scenario:
    geometry: Geometry
    forwards: list[Forward]
    seed: int = 0
    input_dtype: Optional[str] = None     # None: the pool dtype (fp8 pools get bf16)
    k_scale: Scale = field(default_factory=Scale)
    v_scale: Scale = field(default_factory=Scale)
    loc_dtype: str = "int64"
    mapping: Optional[list[int]] = None   # full_to_swa_index_mapping without the trailing -1
    stray_swa_loc: bool = False           # non-SWA pools get a junk swa_loc they must ignore
    name: str = ""

    def layers_of(self, forward: Forward) -> list[int]:
        return list(range(self.geometry.layer_num)) if forward.layers is None else forward.layers

    @property
    def narrowed(self) -> bool:
        return any(f.narrow is not None and f.narrow < len(f.loc) for f in self.forwards)
