"""Storage dtypes the pools support, declared as data.

SGLang keeps fp8 caches in uint8 buffers (index_put has no fp8 kernel on every device) and
views them back as fp8 on read; `store_dtype` records that.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DtypeSpec:
    name: str
    dtype: torch.dtype
    store_dtype: torch.dtype

    @property
    def is_fp8(self) -> bool:
        return self.store_dtype != self.dtype


DTYPES: dict[str, DtypeSpec] = {
    spec.name: spec
    for spec in (
        DtypeSpec("bf16", torch.bfloat16, torch.bfloat16),
        DtypeSpec("fp16", torch.float16, torch.float16),
        DtypeSpec("fp32", torch.float32, torch.float32),
        DtypeSpec("fp8_e4m3", torch.float8_e4m3fn, torch.uint8),
        DtypeSpec("fp8_e5m2", torch.float8_e5m2, torch.uint8),
    )
}


def dtype_spec(name: str) -> DtypeSpec:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; choose from {', '.join(DTYPES)}") from None


def store_dtype_of(dtype: torch.dtype) -> torch.dtype:
    """The buffer dtype SGLang uses for a pool dtype (fp8 is stored as uint8)."""
    for spec in DTYPES.values():
        if spec.dtype == dtype:
            return spec.store_dtype
    return dtype
