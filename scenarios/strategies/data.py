"""What is written: input dtypes, scales in every form SGLang passes them, and the values."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

from pools.dtypes import DTYPES
from scenarios.model import SCALE_KINDS, Scale
from scenarios.strategies.built_once import sampled

SCALE_VALUES = (1.0, 0.5, 2.0, 0.25, 3.0)


@lru_cache(maxsize=None)  # one strategy object (built_once.py)
def scales() -> st.SearchStrategy[Scale]:
    """None, a float, a 0-d tensor or an nn.Parameter; shrinks to no scale."""
    return st.builds(Scale, sampled(SCALE_KINDS), sampled(SCALE_VALUES))


def input_dtypes(dtype: str) -> st.SearchStrategy:
    """The caller's k/v dtype: the pool's own (None), or another one, which makes the pool divide
    by the scales in place and cast. fp8 never arrives as input."""
    others = [name for name, spec in DTYPES.items() if not spec.is_fp8 and name != dtype]
    return sampled((None, *others))


def value_kinds(special_values: bool) -> st.SearchStrategy[str]:
    """Normal draws, near the range limit, and (opt-in) ±0, subnormals, ±inf and NaN."""
    return sampled(("normal", "extreme", "special") if special_values else ("normal", "extreme"))


@lru_cache(maxsize=None)  # one strategy object per argument (built_once.py)
def data_fields(dtype: str, special_values: bool) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {
            "input_dtype": input_dtypes(dtype),
            "k_scale": scales(),
            "v_scale": scales(),
            "loc_dtype": sampled(("int64", "int32")),
            "values": value_kinds(special_values),
            "fused_qkv": st.booleans(),
        }
    )
