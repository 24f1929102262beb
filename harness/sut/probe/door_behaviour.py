"""Capabilities of a write door decided by running it on a tiny pool, not by reading its source.

A door unwraps a KVWriteLoc when, handed `KVWriteLoc(loc)`, it writes the bytes it writes for the
bare `loc`; whatever the release calls the code that takes the loc apart (a module helper, a
classmethod, a method) does not enter into it. The bare loc is the control: a door that cannot
write it here (a kernel that needs a GPU) decides nothing, and the caller says so.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from backends.release_batch import forward_batch
from backends.sglang_names import PHYSICAL_CHECK_NAMES
from harness.sut.probe.source_probe import live_method, reaches_word

# Builds a fresh tiny pool; writes `loc_info` through the door under test; reads the bytes back.
MakePool = Callable[[], Any]
Write = Callable[[Any, Any], None]


class DoorDoesNotRun(RuntimeError):
    """The door could not write a bare loc here, so its handling of a KVWriteLoc is undecided."""


def _written(make_pool: MakePool, write: Write, loc_info: Any) -> Any:
    import torch

    pool = make_pool()
    write(pool, loc_info)
    return pool.get_key_buffer(0).contiguous().view(torch.uint8).clone()


def door_takes_write_loc(make_pool: MakePool, write: Write, write_loc: type) -> bool:
    """Whether the door writes `write_loc(loc)` exactly as it writes the bare loc. Raises
    DoorDoesNotRun when the bare loc itself does not write here."""
    import torch

    loc = torch.tensor([1, 2])
    try:
        expected = _written(make_pool, write, loc)
    except Exception as error:  # noqa: BLE001 - a foreign door may fail any way at all
        raise DoorDoesNotRun(f"a bare loc does not write here: {type(error).__name__}: {error}")
    try:
        written = _written(make_pool, write, write_loc(loc))
    except Exception:  # noqa: BLE001 - the door does not take a KVWriteLoc apart
        return False
    return torch.equal(written, expected)


def decided_by_running(
    run: Callable[[], bool], read_source: Callable[[], bool], decided_from_source: list[str]
) -> bool:
    """`run()`, or where the door does not run here `read_source()`, noting in
    `decided_from_source` why the source was read."""
    try:
        return run()
    except DoorDoesNotRun as why:
        decided_from_source.append(str(why))
        return read_source()


def _mla_doors_unwrap_in_source(cls: Any) -> bool:
    doors = [
        live_method(cls, name)
        for name in ("set_kv_buffer", "set_mla_kv_buffer")
        if hasattr(cls, name)
    ]
    if any(door is None for door in doors):
        raise LookupError("no readable source for the MLA doors")
    return all(reaches_word(node, resolve, "unwrap") for node, resolve in doors)


def _latent_doors(layer: Any) -> dict[str, Callable[[Any, Any], None]]:
    """The two MLA doors as a write of two tokens (nope 4 wide, rope 4 wide) at a loc."""
    import torch

    nope = torch.ones(2, 1, 4, dtype=torch.bfloat16)
    rope = torch.full((2, 1, 4), 2.0, dtype=torch.bfloat16)
    row = torch.cat([nope, rope], dim=-1)
    return {
        "set_kv_buffer": lambda pool, loc: pool.set_kv_buffer(layer, loc, row, row),
        "set_mla_kv_buffer": lambda pool, loc: pool.set_mla_kv_buffer(layer, loc, nope, rope),
    }


def _unwraps_by_running(cls: Any, make_pool: Callable[[], Any], write_loc: type) -> bool:
    """Every MLA door of `cls` the class has writes a KVWriteLoc as it writes its bare loc."""
    layer = SimpleNamespace(layer_id=0, is_cross_attention=False)
    return all(
        door_takes_write_loc(make_pool, write, write_loc)
        for name, write in _latent_doors(layer).items()
        if callable(getattr(cls, name, None))
    )


def mla_unwraps(module: Any, from_source: list[str]) -> bool:
    import torch

    def make_pool() -> Any:
        return module.MLATokenToKVPool(
            size=4, page_size=1, dtype=torch.bfloat16, kv_lora_rank=4, qk_rope_head_dim=4,
            layer_num=1, device="cpu", enable_memory_saver=False,
        )  # fmt: skip

    return decided_by_running(
        lambda: _unwraps_by_running(module.MLATokenToKVPool, make_pool, module.KVWriteLoc),
        lambda: _mla_doors_unwrap_in_source(module.MLATokenToKVPool),
        from_source,
    )


def hisparse_dsa_unwraps(module: Any, from_source: list[str]) -> bool:
    """HiSparseDSATokenToKVPool's doors over a one-page pool whose mapping is the identity."""
    import torch

    cls = module.HiSparseDSATokenToKVPool

    def make_pool() -> Any:
        pool = cls(
            size=64, page_size=64, kv_lora_rank=4, dtype=torch.bfloat16, qk_rope_head_dim=4,
            layer_num=1, device="cpu", index_head_dim=128, enable_memory_saver=False,
            kv_cache_dim=8,
        )  # fmt: skip
        pool.register_mapping(torch.arange(256))
        return pool

    def in_source() -> bool:
        door = live_method(cls, "set_kv_buffer")
        if door is None:
            raise LookupError("no readable source for HiSparseDSATokenToKVPool.set_kv_buffer")
        return reaches_word(*door, "unwrap")

    return decided_by_running(
        lambda: _unwraps_by_running(cls, make_pool, module.KVWriteLoc), in_source, from_source
    )


def _refuses_unmarked_loc(module: Any) -> bool:
    """The offered unified MHA pool, handed `KVWriteLoc(loc)` that no plan marked, raises, and
    writes the same loc once the release's own plan has bound it to a batch (for_batch)."""
    import torch

    unified = getattr(module, "UnifiedMHATokenToKVPool", None)
    if unified is None or not callable(getattr(module.KVWriteLoc, "for_batch", None)):
        raise DoorDoesNotRun("no unified pool or KVWriteLoc.for_batch is offered to run")
    pool = unified(
        size=4, page_size=1, dtype=torch.bfloat16, head_num=1, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    layer = SimpleNamespace(layer_id=0, is_cross_attention=False)
    loc, row = torch.tensor([1]), torch.ones((1, 1, 16), dtype=torch.bfloat16)
    bound = forward_batch(module, True, out_cache_loc=loc, token_to_kv_pool=pool)
    pool.set_kv_buffer(layer, module.KVWriteLoc.for_batch(bound), row, row)
    try:
        pool.set_kv_buffer(layer, module.KVWriteLoc(loc), row, row)
    except Exception:  # noqa: BLE001 - the refusal, whatever it raises
        return True
    return False


def physical_check(module: Any, from_source: list[str]) -> bool:
    return decided_by_running(
        lambda: _refuses_unmarked_loc(module),
        lambda: any(
            hasattr(getattr(module, name), attr)
            for name in ("MHATokenToKVPool", "MLATokenToKVPool")
            for attr in PHYSICAL_CHECK_NAMES
        ),
        from_source,
    )


def refuses_unmarked(
    make_pool: MakePool, write_loc: type, bind: Callable[[Any, Any], None], row_width: int
) -> bool | None:
    """Whether a tiny pool refuses `write_loc(loc)` while it writes the loc the release's own
    plan marked (`bind`, backends/sglang_names.py): the design of SGLang's unified pools. None
    where the pool does not construct or write a marked loc here (nothing decided by running)."""
    import torch

    layer = SimpleNamespace(layer_id=0, is_cross_attention=False)
    row = torch.ones((1, 1, row_width), dtype=torch.bfloat16)
    loc = torch.tensor([1])
    try:
        pool = make_pool()
        batch = SimpleNamespace(out_cache_loc=loc)
        bind(batch, pool)
        pool.set_kv_buffer(layer, write_loc.for_batch(batch), row, row.clone())
    except Exception:  # noqa: BLE001 - it does not run here: not decided by running
        return None
    try:
        pool.set_kv_buffer(layer, write_loc(loc), row, row.clone())
    except Exception:  # noqa: BLE001 - the refusal, whatever it raises
        return True
    return False
