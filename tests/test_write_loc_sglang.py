"""The shared write-location API (pools/write_loc.py) and the current era's SWA routing, pinned to
the installed SGLang's own code on the same inputs.

pools.write_loc is shared by the builtin eras, the judge and the mutant bases, so a slip in it
would be invisible to the differential; this is where it is compared with the real thing instead:
SGLang's `KVWriteLoc` (constructor, the `__post_init__` cut, `for_batch`, `for_layer` with a
cross-attention layer) and `unwrap_write_loc`, field by field and object by object. Then every
module that models the current era (the judge, the builtin reference, the mutant base) writes the
same KVWriteLocs as SGLang's pools, and the bytes of every buffer must be equal. Verified facts
of 0.5.23 that this pins: `SWAKVPool.set_kv_buffer` unwraps `loc, swa_loc, _`, so a full layer
writes at `loc` and `full_loc` is ignored; the MHA and MLA pools ignore it too.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, Optional

import pytest
import torch

import mutants.base_current
from backends.release_batch import forward_batch
from harness.sut.load.sglang_loader import INSTALL_HINT, SutLoadError, load_sglang
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc, unwrap_current


def _load() -> tuple[Optional[types.SimpleNamespace], str]:
    try:
        return load_sglang(), ""
    except SutLoadError as error:
        return None, str(error)


SGL, LOAD_ERROR = _load()
CURRENT_FIELDS = tuple(field.name for field in dataclasses.fields(CurrentWriteLoc))


def _skip_reason() -> Optional[str]:
    """Why the installed SGLang cannot pin the current era's API, or None when it can."""
    if SGL is None:
        installed = not LOAD_ERROR.startswith("sglang not installed")
        return f"sglang did not load: {LOAD_ERROR}" if installed else INSTALL_HINT
    if not hasattr(SGL, "KVWriteLoc"):
        return f"sglang {SGL.version} has no KVWriteLoc (an era before bundled)"
    fields = tuple(field.name for field in dataclasses.fields(SGL.KVWriteLoc))
    if fields != CURRENT_FIELDS:
        return f"sglang {SGL.version}'s KVWriteLoc has fields {fields}, not the current era's"
    return None


SKIP_REASON = _skip_reason()
pytestmark = [
    pytest.mark.sglang,
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]

# The modules that model SGLang 0.5.23, each built as the harness builds it.
CURRENT_MODULES: dict[str, Callable[[], Any]] = {
    "judge": lambda: judge_module("current"),
    "builtin": lambda: builtin_module("current", "reference"),
    "mutant-base": lambda: mutants.base_current,
}

LOC = torch.tensor([5, 17, 2, 40, 41, 9, 63, 30])  # unsorted, gapped, never slot 0 (the sink)
FULL_LOC = torch.tensor([6, 18, 3, 42, 43, 10, 60, 31])  # disjoint from LOC: a read would show
ENCODER_LOC = torch.tensor([50, 51, 52, 53, 54, 55, 56, 57])
TOKENS = LOC.shape[0]
SIZE, SIZE_SWA = 64, 32


# ----- KVWriteLoc and unwrap_write_loc, field by field ----------------------------------------


def _fields(write_loc: Any) -> list[tuple[str, Any]]:
    """Each field's value as comparable data: a tensor's values and length, or the value."""
    values = []
    for name in CURRENT_FIELDS:
        value = getattr(write_loc, name)
        values.append((name, value.tolist() if isinstance(value, torch.Tensor) else value))
    return values


def _same_objects(mine: Any, theirs: Any, inputs: dict[str, Any]) -> None:
    """Each field that SGLang keeps as the very object it was given, ours keeps too (a cut makes a
    new tensor, no cut must not)."""
    for name, given in inputs.items():
        assert (getattr(mine, name) is given) == (getattr(theirs, name) is given), name


CUTS = {
    "padded-swa-and-full": (3, 8, 8),
    "equal-lengths": (8, 8, 8),
    "swa-only-padded": (3, 8, None),
    "full-only-padded": (3, None, 8),
    "shorter-than-loc": (6, 2, 4),
    "empty-loc": (0, 5, 5),
    "bare": (4, None, None),
}


@pytest.mark.parametrize("tokens, swa, full", list(CUTS.values()), ids=list(CUTS))
@pytest.mark.parametrize("physical", [False, True])
def test_construction_and_the_post_init_cut(tokens, swa, full, physical):
    inputs = {
        "loc": torch.arange(1, tokens + 1),
        "swa_loc": None if swa is None else torch.arange(100, 100 + swa),
        "full_loc": None if full is None else torch.arange(200, 200 + full),
    }
    theirs = SGL.KVWriteLoc(**inputs, physical=physical)
    mine = CurrentWriteLoc(**inputs, physical=physical)
    assert _fields(mine) == _fields(theirs)
    _same_objects(mine, theirs, inputs)


def test_positional_construction_defaults():
    theirs, mine = SGL.KVWriteLoc(LOC), CurrentWriteLoc(LOC)
    assert _fields(mine) == _fields(theirs)
    assert _fields(theirs) == [
        ("loc", LOC.tolist()),
        ("swa_loc", None),
        ("full_loc", None),
        ("physical", False),
    ]


# The harness's own batch, which its pools read (a SUT without a ForwardBatch or a plan).
HARNESS = types.SimpleNamespace()


def _batch(module: Any, physical: bool) -> Any:
    """The batch a write hands `module`: the release's own ForwardBatch, bound by its own plan
    where `physical` (an unmarked batch is one the plan never bound); the harness's own for
    HARNESS."""
    return forward_batch(module, physical, out_cache_loc=LOC, encoder_out_cache_loc=ENCODER_LOC)


SIDE_LOCS = {
    "none": {},
    "swa": {"swa_loc": torch.arange(100, 112)},
    "swa-and-full": {"swa_loc": torch.arange(100, 112), "full_loc": FULL_LOC},
}


@pytest.mark.parametrize("keywords", list(SIDE_LOCS.values()), ids=list(SIDE_LOCS))
@pytest.mark.parametrize("physical", [False, True])
def test_for_batch(keywords, physical):
    theirs = SGL.KVWriteLoc.for_batch(_batch(SGL, physical), **keywords)
    mine = CurrentWriteLoc.for_batch(_batch(HARNESS, physical), **keywords)
    assert _fields(mine) == _fields(theirs)
    _same_objects(mine, theirs, {"loc": LOC, **keywords})


@pytest.mark.parametrize("cross", [False, True], ids=["self-attention", "cross-attention"])
@pytest.mark.parametrize("keywords", list(SIDE_LOCS.values()), ids=list(SIDE_LOCS))
def test_for_layer(cross, keywords):
    batch, layer = _batch(SGL, physical=True), types.SimpleNamespace(is_cross_attention=cross)
    theirs = SGL.KVWriteLoc.for_layer(batch, layer, **keywords)
    mine = CurrentWriteLoc.for_layer(_batch(HARNESS, physical=True), layer, **keywords)
    assert _fields(mine) == _fields(theirs)
    # A cross-attention layer writes at the encoder loc, which is never marked physical.
    assert (theirs.loc is ENCODER_LOC, theirs.physical) == (cross, not cross)
    _same_objects(mine, theirs, {"loc": batch.out_cache_loc, **keywords})


def _raised(call: Callable[[], Any]) -> Optional[str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return type(error).__name__
    return None


def test_for_batch_and_for_layer_read_the_attributes_sglang_reads():
    """No default stands in for an attribute SGLang requires: a caller without it fails alike."""
    bare_batch = types.SimpleNamespace(out_cache_loc=LOC)
    bare_layer = types.SimpleNamespace()
    for make in (
        lambda cls: cls.for_batch(bare_batch),
        lambda cls: cls.for_layer(
            _batch(SGL if cls is SGL.KVWriteLoc else HARNESS, True), bare_layer
        ),
    ):
        assert _raised(lambda: make(CurrentWriteLoc)) == _raised(lambda: make(SGL.KVWriteLoc))
        assert _raised(lambda: make(SGL.KVWriteLoc)) == "AttributeError"


UNWRAPPED = {
    "bare-tensor": lambda cls: LOC,
    "none": lambda cls: None,
    "loc-only": lambda cls: cls(LOC),
    "every-field": lambda cls: cls(LOC, LOC + 1, FULL_LOC, True),
}


@pytest.mark.parametrize("make", list(UNWRAPPED.values()), ids=list(UNWRAPPED))
def test_unwrap_write_loc(make):
    theirs = SGL.unwrap_write_loc(make(SGL.KVWriteLoc))
    mine = unwrap_current(make(CurrentWriteLoc))
    assert len(mine) == len(theirs) == 3
    for ours, sglangs in zip(mine, theirs):
        assert (ours is None) == (sglangs is None)
        if isinstance(sglangs, torch.Tensor):
            assert torch.equal(ours, sglangs)


# ----- the pools: the same writes, the same bytes ---------------------------------------------


def _mapping() -> torch.Tensor:
    """size + page_size entries then the trailing -1; each written full slot gets its own slot."""
    mapping = torch.zeros(SIZE + 2, dtype=torch.int64)
    order = torch.randperm(SIZE_SWA - 1, generator=torch.Generator().manual_seed(0))
    mapping[LOC] = order[:TOKENS] + 1
    mapping[ENCODER_LOC] = order[TOKENS : 2 * TOKENS] + 1
    mapping[-1] = -1
    return mapping


def _values(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(torch.bfloat16)


def _layer(layer_id: int, cross: bool = False) -> types.SimpleNamespace:
    return types.SimpleNamespace(layer_id=layer_id, is_cross_attention=cross)


def _bytes(pool: Any) -> dict[str, torch.Tensor]:
    """Every buffer of `pool` (of both sub-pools for a SWAKVPool) as raw bytes."""
    pools = (
        {"full": pool.full_kv_pool, "swa": pool.swa_kv_pool}
        if hasattr(pool, "full_kv_pool")
        else {"pool": pool}
    )
    found = {}
    for side, sub_pool in pools.items():
        for name in ("k_buffer", "v_buffer", "kv_buffer"):
            for index, buffer in enumerate(getattr(sub_pool, name, None) or ()):
                found[f"{side}.{name}[{index}]"] = buffer.contiguous().view(torch.uint8)
    return found


def assert_same_bytes(mine: Any, theirs: Any) -> None:
    ours, sglangs = _bytes(mine), _bytes(theirs)
    assert ours.keys() == sglangs.keys()
    for name, buffer in sglangs.items():
        differ = (ours[name] != buffer).flatten(1).any(dim=1).nonzero().flatten().tolist()
        assert not differ, f"{name}: slots {differ} differ from SGLang's"


def _swa_pool(module: Any, mla: bool) -> Any:
    keywords: dict[str, Any] = {}
    if mla:
        sub_pool = {
            "kv_lora_rank": 16,
            "qk_rope_head_dim": 8,
            "page_size": 1,
            "device": "cpu",
            "enable_memory_saver": False,
        }
        keywords = {
            "token_to_kv_pool_class": module.MLATokenToKVPool,
            "full_kv_pool_kwargs": sub_pool,
            "swa_kv_pool_kwargs": sub_pool,
        }
    pool = module.SWAKVPool(
        size=SIZE,
        size_swa=SIZE_SWA,
        page_size=1,
        dtype=torch.bfloat16,
        head_num=1 if mla else 2,
        head_dim=24 if mla else 16,
        swa_attention_layer_ids=[1],
        full_attention_layer_ids=[0, 2],
        device="cpu",
        **keywords,
    )
    pool.register_mapping(_mapping())
    return pool


def _swa_writes(module: Any, door: Callable[[Any, Any, int], None]) -> list[Optional[str]]:
    """The same sequence of writes through `door(layer, loc_info, seed)`, each KVWriteLoc built
    by `module`'s own class; what each write raised (None where it wrote)."""
    write_loc, mapping = module.KVWriteLoc, _mapping()
    padded_swa = torch.cat([mapping[LOC], torch.tensor([0, 0, 0])])
    padded_full = torch.cat([FULL_LOC, torch.tensor([0, 0, 0])])
    batch = _batch(module, physical=True)
    writes = [
        # A SWA layer: the SWA sub-pool at swa_loc; full_loc is beside the point.
        (_layer(1), lambda: write_loc(LOC, mapping[LOC], FULL_LOC)),
        # Full layers: the full sub-pool at loc, though full_loc names other slots.
        (_layer(2), lambda: write_loc(LOC, mapping[LOC], FULL_LOC)),
        (_layer(0), lambda: write_loc(LOC, full_loc=FULL_LOC)),
        # Narrowed (PR #29460): the padded swa_loc and full_loc are cut to the 5 tokens of loc.
        (_layer(1), lambda: write_loc(LOC[:5], padded_swa, padded_full)),
        (_layer(0), lambda: write_loc(LOC[:5], padded_swa, padded_full)),
        # Cross-attention through for_layer: the encoder loc, and its own swa_loc.
        (
            _layer(0, cross=True),
            lambda: write_loc.for_layer(batch, _layer(0, True), full_loc=FULL_LOC),
        ),
        (
            _layer(1, cross=True),
            lambda: write_loc.for_layer(batch, _layer(1, True), swa_loc=mapping[ENCODER_LOC]),
        ),
        # A SWA layer without swa_loc: SGLang asserts, after nothing was written.
        (_layer(1), lambda: write_loc(LOC, full_loc=FULL_LOC)),
    ]
    return [_raised(lambda: door(layer, make(), seed)) for seed, (layer, make) in enumerate(writes)]


@pytest.mark.parametrize("candidate", list(CURRENT_MODULES), ids=list(CURRENT_MODULES))
def test_swa_over_mha_routes_as_sglang(candidate):
    def door(pool: Any) -> Callable[[Any, Any, int], None]:
        def write(layer: Any, loc_info: Any, seed: int) -> None:
            tokens = loc_info.loc.shape[0]
            k, v = _values(tokens, 2, 16, seed=2 * seed), _values(tokens, 2, 16, seed=2 * seed + 1)
            pool.set_kv_buffer(layer, loc_info, k, v)

        return write

    module = CURRENT_MODULES[candidate]()
    theirs, mine = _swa_pool(SGL, mla=False), _swa_pool(module, mla=False)
    raised = _swa_writes(SGL, door(theirs))
    assert raised == [None] * 7 + ["AssertionError"]
    assert _swa_writes(module, door(mine)) == raised
    assert_same_bytes(mine, theirs)


def test_sglang_swa_pool_ignores_full_loc():
    """The fact the routing above rests on, stated on SGLang's pool alone: a full layer's rows
    land at loc, and the full_loc slots stay zero."""
    pool = _swa_pool(SGL, mla=False)
    k = _values(TOKENS, 2, 16, seed=0)
    pool.set_kv_buffer(_layer(2), SGL.KVWriteLoc(LOC, None, FULL_LOC), k, k)
    keys = pool.full_kv_pool.k_buffer[1]
    assert torch.equal(keys[LOC].view(torch.uint8), k.view(torch.uint8))
    assert not keys[FULL_LOC].view(torch.uint8).any()


@pytest.mark.parametrize("candidate", list(CURRENT_MODULES), ids=list(CURRENT_MODULES))
def test_swa_over_mla_routes_as_sglang(candidate):
    if not SGL.swa_mla:
        pytest.skip(f"sglang {SGL.version}: SWAKVPool takes no MLA sub-pools")

    def door(pool: Any) -> Callable[[Any, Any, int], None]:
        def write(layer: Any, loc_info: Any, seed: int) -> None:
            tokens = loc_info.loc.shape[0]
            if seed % 2:  # alternate the two doors
                whole = _values(tokens, 1, 24, seed=seed)
                pool.set_kv_buffer(layer, loc_info, whole, whole)
            else:
                nope, rope = _values(tokens, 1, 16, seed=seed), _values(tokens, 1, 8, seed=-seed)
                pool.set_mla_kv_buffer(layer, loc_info, nope, rope)

        return write

    module = CURRENT_MODULES[candidate]()
    theirs, mine = _swa_pool(SGL, mla=True), _swa_pool(module, mla=True)
    raised = _swa_writes(SGL, door(theirs))
    assert raised == [None] * 7 + ["AssertionError"]
    assert _swa_writes(module, door(mine)) == raised
    assert_same_bytes(mine, theirs)


def _token_pool(module: Any, mla: bool) -> Any:
    common = {"size": SIZE, "page_size": 1, "dtype": torch.bfloat16, "layer_num": 1}
    if mla:
        return module.MLATokenToKVPool(
            **common, kv_lora_rank=16, qk_rope_head_dim=8, device="cpu", enable_memory_saver=False
        )
    return module.MHATokenToKVPool(
        **common, head_num=2, head_dim=16, device="cpu", enable_memory_saver=False
    )


@pytest.mark.parametrize("candidate", list(CURRENT_MODULES), ids=list(CURRENT_MODULES))
@pytest.mark.parametrize("mla", [False, True], ids=["mha", "mla"])
def test_token_pools_write_at_loc_whatever_swa_loc_and_full_loc_say(candidate, mla):
    module = CURRENT_MODULES[candidate]()
    theirs, mine = _token_pool(SGL, mla), _token_pool(module, mla)
    for pool, write_loc in ((theirs, SGL.KVWriteLoc), (mine, module.KVWriteLoc)):
        loc_info = write_loc(LOC, LOC + 1, FULL_LOC)
        if mla:
            nope, rope = _values(TOKENS, 1, 16, seed=1), _values(TOKENS, 1, 8, seed=2)
            pool.set_mla_kv_buffer(_layer(0), loc_info, nope, rope)
            whole = _values(TOKENS, 1, 24, seed=3)
            pool.set_kv_buffer(_layer(0), write_loc(ENCODER_LOC, None, FULL_LOC), whole, whole)
        else:
            k, v = _values(TOKENS, 2, 16, seed=1), _values(TOKENS, 2, 16, seed=2)
            pool.set_kv_buffer(_layer(0), loc_info, k, v)
    assert_same_bytes(mine, theirs)
