"""What a loaded SUT offers, probed from the module itself,
and the era those capabilities amount to.

Nothing here reads a version number: a release or fork nobody named is judged by its names,
dataclass fields, signatures and the source text of its write doors. Every probe that fails
records None ("unknown") with its reason instead of raising, so a strange SUT is described, not
crashed on. harness/sut/probe/source_capabilities.py decides the same capabilities from an
unpacked package's source, for releases that cannot be imported here.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from backends.sglang_names import DCP_MASK
from backends.write_loc_fields import write_loc_fields
from harness.sut.probe.door_behaviour import hisparse_dsa_unwraps, mla_unwraps, physical_check
from harness.sut.probe.source_probe import (
    always_launches_kernel,
    live_method,
    reaches_word,
)
from harness.sut.probe.unwrap_helper import unwrap_helper

# SGLang's name for the slot a store never writes (mla_buffer.py): a door that reaches it skips.
SKIP_INDEX = "reserved_skip_index"

# The field a probe sets to None, and why it could not decide.
Unknown = tuple[str, str]


@dataclass(frozen=True)
class Capabilities:
    write_loc: bool | None = None  # a KVWriteLoc class exists
    write_loc_fields: tuple[str, ...] | None = None
    for_layer: bool | None = None  # KVWriteLoc.for_layer(forward_batch, layer, ...)
    for_batch: bool | None = None  # KVWriteLoc.for_batch(forward_batch, ...)
    cuts_to_loc_len: bool | None = None  # KVWriteLoc(loc, longer swa_loc) keeps len(loc)
    unwrap_arity: int | None = None  # len(unwrap helper(...)); None: no such function
    swa_loc_keyword: bool | None = None  # SWAKVPool.set_kv_buffer(..., swa_loc=)
    swa_over_mla: bool | None = None  # SWAKVPool takes MLA sub-pools (full/swa_kv_pool_kwargs)
    mla_door_needs_gpu: bool | None = (
        None  # set_mla_kv_buffer launches a Triton kernel on every path
    )
    mla_unwraps_write_loc: bool | None = (
        None  # the MLA doors accept a KVWriteLoc (PR #27695 review)
    )
    physical_check: bool | None = None  # pools can refuse a loc not marked physical
    # set_mla_kv_buffer(layer, loc, nope, None) writes on a pool without rope columns (0.5.14
    # casts and measures k_rope unconditionally and raises); decided only by calling it
    mla_door_takes_no_rope: bool | None = None
    # set_mla_kv_buffer's store takes a reserved_skip_index (slot 0): with a rope part it never
    # writes the reserved slot that CUDA-graph padding points at (#32477)
    mla_skips_reserved_slot: bool | None = None
    # MHATokenToKVPool has set_kv_buffer_prefix_valid (a speculative draft's commit, 0.5.14 on)
    prefix_valid_door: bool | None = None
    # MHATokenToKVPool.set_kv_buffer takes a DCP rank's dcp_kv_mask (0.5.23; triton_dcp's door)
    dcp_mask_door: bool | None = None
    # QSATokenToKVPool takes qsa_indexer_dtype: its compressed keys may be fp8 (0.5.22 on; 0.5.20
    # and 0.5.21 keep them bf16). Decided on the loaded class, where the loader offers it
    qsa_indexer_dtype: bool | None = None
    # its CPU path divides the caller's k and v in place before selecting the committed rows
    # (0.5.14 to 0.5.21); 0.5.22 on divides a copy of those rows. Decided only by calling it
    prefix_valid_divides_caller: bool | None = None
    # HiSparseDSATokenToKVPool.set_kv_buffer unwraps a KVWriteLoc (0.5.22 on); 0.5.15 to 0.5.21
    # index their mapping with the loc as given, and no call site of theirs hands it anything
    # else. Decided on the loaded class, where the loader offers it
    hisparse_dsa_unwraps_write_loc: bool | None = None
    # HybridLinearKVPool takes use_dsa and has set_index_k_scale_buffer: its full-attention
    # layers may be a DSATokenToKVPool's (0.5.21 on). Decided on the loaded class
    hybrid_linear_dsa: bool | None = None
    # SWAKVPool takes a class per side (full_kv_pool_class) and routes set_index_k_scale_buffer
    # to its full side, and the release has DSATokenToKVPool: a DSA full side beside an MLA SWA
    # side (0.5.21 on)
    swa_dsa: bool | None = None
    # DeepSeekV4IndexerPool takes global_page_size: its page count reserves a page of the model's
    # logical size (0.5.22 on); 0.5.12 to 0.5.21 reserve one of their own. Decided on the class
    dsv4_indexer_global_page: bool | None = None
    # MLATokenToKVPool can be a decode-context-parallel rank's pool (takes dcp_size, dcp_rank):
    # the loader offers it where the release's parallel context reads a DCP group's fields
    # (0.5.23, harness/sut/load/dcp_rank.py). Decided on the loaded class
    mla_dcp_rank: bool | None = None
    unknown: tuple[Unknown, ...] = field(default=())
    # The capabilities this probe decided from source text rather than by running, each with
    # the reason nothing could run here (SOURCE_ONLY, or a door that did not write a bare loc).
    from_source: tuple[Unknown, ...] = field(default=())

    def reason_unknown(self, name: str) -> str | None:
        return next((why for field_name, why in self.unknown if field_name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: a worker sends its SUT's capabilities to the parent this way."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Capabilities:
        def frozen(value: Any) -> Any:
            return tuple(map(frozen, value)) if isinstance(value, list) else value

        return cls(**{name: frozen(value) for name, value in values.items()})


# Capabilities read from the source because they are claims about a GPU kernel path, which a
# CPU cannot run: what they would decide is not what runs here.
SOURCE_ONLY = {
    "mla_door_needs_gpu": "whether every path of set_mla_kv_buffer launches a kernel is a claim "
    "about the release on a GPU; here its kernels are interpreted, so running it cannot tell",
    "mla_skips_reserved_slot": "the reserved-slot skip lives in the GPU store kernel; on a CPU "
    "the door takes its torch path, which writes slot 0 whatever the kernel does",
}
# Capabilities decided by running the door on a tiny pool; read from the source only where the
# door cannot write a bare loc here (door_behaviour.DoorDoesNotRun), and then listed.
RUN_WHERE_IT_RUNS = ("mla_unwraps_write_loc", "physical_check", "hisparse_dsa_unwraps_write_loc")


# ---- probing a loaded module -------------------------------------------------------------------


def _cuts_to_loc_len(module: Any) -> bool:
    import torch  # CPU tensors only: the probe must run where no device is

    loc, swa_loc = torch.arange(2), torch.arange(4)
    # The second field holds the SWA loc, whatever the release calls it (call sites pass it so).
    second = write_loc_fields(module.KVWriteLoc)[1]
    return int(getattr(module.KVWriteLoc(loc, swa_loc), second).shape[0]) == 2


def _unwrap_arity(module: Any) -> int | None:
    unwrap = unwrap_helper(module, module.KVWriteLoc)
    if unwrap is None:
        return None
    import torch

    return len(unwrap(module.KVWriteLoc(torch.arange(2))))


def _real_init(cls: type) -> Callable:
    """The first __init__ in the MRO with a real signature: loaders wrap classes in subclasses
    whose __init__ takes only (self, *args, **kwargs)."""
    wrapper = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]
        if {param.kind for param in params} - wrapper:
            return init
    return cls.__init__


def _swa_over_mla(module: Any) -> bool:
    params = inspect.signature(_real_init(module.SWAKVPool)).parameters
    return bool({"full_kv_pool_kwargs", "swa_kv_pool_kwargs"} & set(params))


def _swa_dsa(module: Any) -> bool:
    params = inspect.signature(_real_init(module.SWAKVPool)).parameters
    return (
        "full_kv_pool_class" in params
        and callable(getattr(module.SWAKVPool, "set_index_k_scale_buffer", None))
        and hasattr(module, "DSATokenToKVPool")
    )


def _mla_door_needs_gpu(module: Any) -> bool:
    door = live_method(module.MLATokenToKVPool, "set_mla_kv_buffer")
    if door is None:
        raise LookupError("no readable source for MLATokenToKVPool.set_mla_kv_buffer")
    return always_launches_kernel(*door)


# The capabilities decided on a class the loader offers only where the release has it (and so
# never from the source alone): name -> (class, probe of the class).
OFFERED_CLASS_PROBES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "qsa_indexer_dtype": (
        "QSATokenToKVPool",
        lambda cls: "qsa_indexer_dtype" in inspect.signature(cls).parameters,
    ),
    "hybrid_linear_dsa": (
        "HybridLinearKVPool",
        lambda cls: (
            "use_dsa" in inspect.signature(cls).parameters
            and callable(getattr(cls, "set_index_k_scale_buffer", None))
        ),
    ),
    "dsv4_indexer_global_page": (
        "DeepSeekV4IndexerPool",
        lambda cls: "global_page_size" in inspect.signature(cls).parameters,
    ),
    "mla_dcp_rank": (
        "MLATokenToKVPool",
        lambda cls: "dcp_size" in inspect.signature(cls).parameters,
    ),
}


def _mla_door_takes_no_rope(module: Any) -> bool:
    """Call set_mla_kv_buffer with k_rope=None on a one-slot, rope-less MLA pool. The nope part
    comes in fp32, so a release that casts k_rope does so before any kernel launch: a raise about
    None means no, a write means yes, anything else (a kernel that needs a GPU) is unknown."""
    import torch

    pool = module.MLATokenToKVPool(
        size=4, page_size=1, dtype=torch.bfloat16, kv_lora_rank=4, qk_rope_head_dim=0,
        layer_num=1, device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    layer = SimpleNamespace(layer_id=0, is_cross_attention=False)
    nope = torch.ones(1, 1, 4, dtype=torch.float32)
    try:
        pool.set_mla_kv_buffer(layer, torch.tensor([1]), nope, None)
    except (AttributeError, TypeError) as error:
        if "NoneType" not in str(error):
            raise
        return False
    return True


def _mla_skips_reserved_slot(module: Any) -> bool:
    door = live_method(module.MLATokenToKVPool, "set_mla_kv_buffer")
    if door is None:
        raise LookupError("no readable source for MLATokenToKVPool.set_mla_kv_buffer")
    return reaches_word(*door, SKIP_INDEX)


def _prefix_valid_divides_caller(module: Any) -> bool:
    """Whether a scaled draft commit of fp32 rows to a bf16 pool changes the caller's k. Only
    the door's own steps run: the pool's set_kv_buffer, which it hands the committed rows to, is
    replaced on the instance by one that writes nothing, so a SUT whose write hangs or kills the
    process is not run before any check has a timeout around it."""
    import torch

    pool = module.MHATokenToKVPool(
        size=4, page_size=1, dtype=torch.bfloat16, head_num=1, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    pool.set_kv_buffer = lambda *args, **kwargs: None
    layer = SimpleNamespace(layer_id=0, is_cross_attention=False)
    k, v = torch.full((2, 1, 16), 3.0), torch.full((2, 1, 16), 3.0)
    pool.set_kv_buffer_prefix_valid(
        layer, torch.tensor([[1, 2]]), torch.tensor([1]), k, v, 2.0, 2.0
    )
    return not bool((k == 3.0).all())


def probe(module: Any) -> Capabilities:
    """The capabilities of `module` (an SGLang-like namespace); never raises."""
    values: dict[str, Any] = {}
    unknown: list[Unknown] = []
    # Why a capability that is decided by running a door was read from its source instead.
    read_source: dict[str, list[str]] = {name: [] for name in RUN_WHERE_IT_RUNS}

    def attempt(name: str, how: Callable[[], Any]) -> None:
        try:
            values[name] = how()
        except Exception as error:  # noqa: BLE001 - a probe of foreign code may fail any way at all
            values[name] = None
            unknown.append((name, f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"))

    has_write_loc = hasattr(module, "KVWriteLoc")
    values["write_loc"] = has_write_loc
    if has_write_loc:
        attempt("write_loc_fields", lambda: write_loc_fields(module.KVWriteLoc))
        values["for_layer"] = callable(getattr(module.KVWriteLoc, "for_layer", None))
        values["for_batch"] = callable(getattr(module.KVWriteLoc, "for_batch", None))
        attempt("cuts_to_loc_len", lambda: _cuts_to_loc_len(module))
        attempt("unwrap_arity", lambda: _unwrap_arity(module))
    else:
        values.update(write_loc_fields=(), for_layer=False, for_batch=False, cuts_to_loc_len=False)
    attempt(
        "swa_loc_keyword",
        lambda: "swa_loc" in inspect.signature(module.SWAKVPool.set_kv_buffer).parameters,
    )
    attempt("swa_over_mla", lambda: _swa_over_mla(module))
    attempt("swa_dsa", lambda: _swa_dsa(module))
    attempt("mla_door_needs_gpu", lambda: _mla_door_needs_gpu(module))
    attempt(
        "mla_unwraps_write_loc",
        lambda: (
            mla_unwraps(module, read_source["mla_unwraps_write_loc"]) if has_write_loc else False
        ),
    )
    attempt(
        "physical_check",
        lambda: physical_check(module, read_source["physical_check"]) if has_write_loc else False,
    )
    if getattr(module, "HiSparseDSATokenToKVPool", None) is None:
        unknown.append(("hisparse_dsa_unwraps_write_loc", "no HiSparseDSATokenToKVPool offered"))
    else:
        attempt(
            "hisparse_dsa_unwraps_write_loc",
            lambda: (
                hisparse_dsa_unwraps(module, read_source["hisparse_dsa_unwraps_write_loc"])
                if has_write_loc
                else False
            ),
        )
    attempt("mla_door_takes_no_rope", lambda: _mla_door_takes_no_rope(module))
    attempt("mla_skips_reserved_slot", lambda: _mla_skips_reserved_slot(module))
    values["prefix_valid_door"] = callable(
        getattr(getattr(module, "MHATokenToKVPool", None), "set_kv_buffer_prefix_valid", None)
    )
    if values["prefix_valid_door"]:
        attempt("prefix_valid_divides_caller", lambda: _prefix_valid_divides_caller(module))
    else:
        unknown.append(("prefix_valid_divides_caller", "no set_kv_buffer_prefix_valid"))
    attempt(
        "dcp_mask_door",
        lambda: DCP_MASK in inspect.signature(module.MHATokenToKVPool.set_kv_buffer).parameters,
    )
    for name, (class_name, how) in OFFERED_CLASS_PROBES.items():
        cls = getattr(module, class_name, None)
        if cls is None:
            unknown.append((name, f"no {class_name} offered"))
        else:
            attempt(name, lambda how=how, cls=cls: how(cls))
    from_source = [
        (name, SOURCE_ONLY[name]) for name in SOURCE_ONLY if values.get(name) is not None
    ]
    from_source += [(name, "; ".join(why)) for name, why in read_source.items() if why]
    return Capabilities(**values, unknown=tuple(unknown), from_source=tuple(from_source))


# Every probed capability's name (a probe that cannot read the source leaves each unknown).
PROBED = tuple(
    item.name
    for item in dataclasses.fields(Capabilities)
    if item.name not in ("unknown", "from_source")
)
