"""Backends whose own release code runs on a CPU: where an SGLang SUT carries a backend's class,
its cells drive that class instead of the call-site model, so the bytes compared are the ones
the release's `forward_extend` / `forward_decode` write.

One driver, and per backend a `RealCode` declaration beside its registry entry saying only what
differs: the class, the stand-ins its module's import needs for GPU-only packages, whether the
release's own `__init__` and `init_forward_metadata` run, and the attributes the write reads when
they do not (they build attention kernels, CUDA-graph buffers and device metadata).

Only the write is driven. The pool's write doors are wrapped for the call so that the forward
stops once the door returns: the attention math after the write, which reads the cache and has
no bearing on it, never runs, whatever kernels the backend would launch. The write call itself,
every branch before it and the KVWriteLoc it builds are the release's own. Whatever the release
reads that the driver's stand-in objects lack raises DriverGap, which the verdict reports as a
skip naming the attribute (the driver's gap, never a finding against the release); so does a
GPU-only stand-in called before the write. The judge has no such class, so the baseline stays
the model: a release whose real code differs from the model shows as a finding against the
release's real code.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Mapping, Optional

import torch

from backends.context import WriteRequest
from backends.cp_release import host_requests
from backends.release_batch import declared_defaults
from backends.sglang_names import (
    ABSENT_ATTENTION_OUTPUT,
    BATCH_INPUT_IDS,
    FORWARD_BATCH_INFO,
    FORWARD_CONTEXT,
    REQ_TO_TOKEN,
    REQ_TO_TOKEN_POOL,
)

# The pool methods a backend writes through: wrapped so the forward stops after the write.
WRITE_DOORS = ("set_kv_buffer", "set_mla_kv_buffer")
# Kinds of stand-in name, as harness/sut/load/sglang_standins.py reads them.
GPU_CLASS, GPU_FUNCTION = "class", "func"
# ForwardBatch fields only the attention math reads: passed as None.
ATTENTION_ONLY_FIELDS = (
    "req_pool_indices",
    "seq_lens",
    "extend_prefix_lens",
    "extend_seq_lens",
    "encoder_lens",
)

Fields = Callable[[WriteRequest, str], dict]  # (request, mode) -> attribute values


def no_fields(req: WriteRequest, mode: str) -> dict:
    return {}


def pool_quant_method(req: WriteRequest) -> dict:
    """`kv_cache_quant_method` as a backend's __init__ asks the pool for it, where the pool has
    `get_kv_cache_quant_method` (0.5.23); none on older pools, whose backends do not read it."""
    ask = getattr(req.pool, "get_kv_cache_quant_method", None)
    return {} if ask is None else {"kv_cache_quant_method": ask()}


class _NoAttention:
    """An attention kernel or wrapper left out: every method returns None and any index gives the
    same object (flashinfer's `forward_metadata.prefill_wrappers[i]`, its ragged wrapper). Only
    for kernels whose output the write does not read: a release that fed it to the write would
    fail on the None, which is then an exception of the driver's making (see the declarations)."""

    def __getitem__(self, index: Any) -> "_NoAttention":
        return self

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


NO_ATTENTION = _NoAttention()


@dataclass(frozen=True)
class RealCode:
    """How one backend's release class is driven. `standins`: GPU-only module -> the names its
    import reads (GPU_CLASS or GPU_FUNCTION). `construct`: the release's `__init__` runs with the
    stand-in model runner; otherwise the instance is made without it and carries
    `fields(req, mode)` and the driver's common attributes. `own_metadata`: the release's
    `init_forward_metadata` runs; otherwise `forward_metadata` is a stand-in holding the release
    pool's own SWA translation of the padded loc and `metadata(req, mode)`."""

    module: str
    cls: str
    standins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    construct: bool = False
    own_metadata: bool = False
    fields: Fields = no_fields
    metadata: Fields = no_fields
    # A release method that builds the write's metadata from the padded loc, run where the
    # release has it (intel_amx `_init_swa_forward_metadata`, 0.5.23), after `fields`.
    swa_metadata_method: str = ""
    # The backend's modes its release code runs in (empty: all); the others run the model, for
    # `why_model`.
    modes: tuple[str, ...] = ()
    # Pool kinds whose cells run the model in every mode, for `why_model`.
    model_kinds: tuple[str, ...] = ()
    why_model: str = ""
    # The part of the write another release object makes before the class's forward, done by
    # the model first where the forward is told to save, as the model's own write does (dsa: the
    # layer's Indexer stores its keys before attention).
    model_first: Optional[Callable[[WriteRequest], None]] = None
    # Arguments the forward requires that only the attention after the write reads (qsa: the
    # indexer's top-k rows), as the driver hands them: zeros, as its query is.
    forward_kwargs: Fields = no_fields
    # A write the release makes only inside a process group (cp: backends/cp_release.py):
    # whether this process's release joined one, and how the release cuts the batch's full
    # (query, k, v) to this rank's share. Elsewhere the model writes.
    in_group: Optional[Callable[[], bool]] = None
    shard: Optional[Callable[[Any, tuple], tuple]] = None

    def runs_in(self, mode: str, pool: str = "") -> bool:
        return (
            (not self.modes or mode in self.modes)
            and pool not in self.model_kinds
            and (self.in_group is None or self.in_group())
        )

    @property
    def where(self) -> str:
        return f"{self.module}.{self.cls}"


class DriverGap(Exception):
    """The release's backend read an attribute the driver's stand-in objects do not carry. Not an
    AttributeError, so that a release's getattr(x, name, default) or hasattr cannot quietly take
    another path than it would on the real object."""


class StandInUsed(RuntimeError):
    """A stand-in for a GPU-only module (harness/sut/load/sglang_standins.py) was called."""


class _Written(BaseException):  # not Exception: a release's `except Exception` must not eat it
    """Raised by a wrapped write door once the release's write returned: the forward stops."""


class _StandIn(SimpleNamespace):
    """A model runner, ForwardBatch, layer or metadata with only what the driver knows to give."""

    def __init__(self, role: str, **fields: Any):
        super().__init__(**fields)
        object.__setattr__(self, "_role", role)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe for optional hooks
            raise AttributeError(name)
        raise DriverGap(
            f"the release's backend reads {self._role}.{name}, which backends/real_code.py does "
            "not provide"
        )


def real_class(req: WriteRequest, backend: str) -> Any:
    """The release's class for `backend`, when the SUT carries it."""
    return (getattr(req.api, "real_backends", None) or {}).get(backend)


@cache  # one subclass per release class, not one per write
def _driven(cls: type, constructed: bool) -> type:
    """The release class, and, where its __init__ is not run, a DriverGap for any attribute the
    driver did not set (instead of an AttributeError a getattr default would swallow)."""
    if constructed:
        return cls

    def missing(self: Any, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise DriverGap(
            f"the release's backend reads self.{name}, which backends/real_code.py does not "
            f"set ({cls.__name__}.__init__ is not run)"
        )

    return type(f"Driven{cls.__name__}", (cls,), {"__getattr__": missing})


def _release_frames(frame: Any) -> str:
    """The release's frames from its forward down to the door call, as `file:line in function`
    (`triton_backend.py:2340 in forward_decode > triton_backend.py:1663 in _set_kv_buffer`): the
    frames up to the driver's own call of the forward."""
    frames = []
    while frame is not None and frame.f_code.co_filename != __file__:
        name = os.path.basename(frame.f_code.co_filename)
        frames.append(f"{name}:{frame.f_lineno} in {frame.f_code.co_name}")
        frame = frame.f_back
    return " > ".join(reversed(frames))


@contextmanager
def _stopping_after_write(pool: Any, sites: Optional[list[str]]) -> Iterator[None]:
    """The pool's write doors, wrapped: each records where the release called it (unless `sites`
    is None: a timed write leaves the frame walk out of its figure), and the forward stops once
    the door returns."""

    def stopping(door: Callable) -> Callable:
        def write(*args: Any, **kwargs: Any) -> None:
            if sites is not None:
                sites.append(_release_frames(sys._getframe(1)))
            door(*args, **kwargs)
            raise _Written

        return write

    doors = [name for name in WRITE_DOORS if callable(getattr(pool, name, None))]
    for name in doors:
        setattr(pool, name, stopping(getattr(pool, name)))
    try:
        yield
    finally:
        for name in doors:
            vars(pool).pop(name, None)


@contextmanager
def _forward_context(backend: Any) -> Iterator[None]:
    """The forward context a model runner publishes around each forward, naming `backend`, where
    the release has one (0.5.23): what get_token_to_kv_pool() answers inside the forward."""
    module, function, record, field_name = FORWARD_CONTEXT
    try:
        release = importlib.import_module(module)
        publish, context = getattr(release, function), getattr(release, record)
    except (ImportError, AttributeError):
        yield
        return
    with publish(context(**{field_name: backend})):
        yield


def _forward_mode(mode: str) -> dict:
    """The release's own ForwardMode for the batch; none where the release has no such module
    (a package carrying only the write path), so reading it is a DriverGap."""
    try:
        modes = importlib.import_module(FORWARD_BATCH_INFO).ForwardMode
    except ImportError:
        return {}
    return {"forward_mode": modes.DECODE if mode == "decode" else modes.EXTEND}


def _batch_defaults() -> dict:
    """The release's ForwardBatch defaults; none where the release has no such module."""
    try:
        cls = importlib.import_module(FORWARD_BATCH_INFO).ForwardBatch
    except ImportError:
        return {}
    return declared_defaults(cls) if dataclasses.is_dataclass(cls) else {}


def padded_loc(req: WriteRequest) -> Any:
    """The loc the metadata is built from: the padded one, as in serving (SGLang #29460 is the
    difference between it and the narrowed loc the layers write)."""
    padded = req.forward_batch.padded_out_cache_loc
    return padded if padded is not None else req.forward_batch.out_cache_loc


def swa_translation(req: WriteRequest) -> Optional[Any]:
    """The SWA write loc as the release's own pool translates the padded loc (what each backend's
    init_forward_metadata asks the pool for), or None on a pool without sliding-window layers."""
    if not req.use_sliding_window_kv_pool:
        return None
    return req.pool.translate_loc_from_full_to_swa(padded_loc(req))


def _declared(values: Fields, req: WriteRequest, mode: str) -> dict:
    """A declaration's attribute values; one the SUT's pool cannot answer (a release without the
    attribute a declaration reads) is the driver's gap, not the release's error."""
    try:
        return values(req, mode)
    except AttributeError as error:
        raise DriverGap(f"backends/real_code.py's declaration cannot be computed here: {error}")


def drive(real: RealCode, cls: type, req: WriteRequest, mode: str, mla_input: str) -> str:
    """One layer's write of one forward through the release's own backend; returns where the
    release called the write door ("" if it wrote nothing)."""
    return prepare_forward(real, cls, req, mode, mla_input)(True)


ForwardToDoor = Callable[[bool], str]  # (record where the door was called) -> that place or ""


def prepare_forward(
    real: RealCode, cls: type, req: WriteRequest, mode: str, mla_input: str
) -> ForwardToDoor:
    """The release's backend made ready for one layer's write (its instance, metadata, batch and
    layer), and the call of its forward from entry to the write door's return: `kvh bench` times
    that call alone, as serving runs it once per layer after the batch's metadata."""
    split_mla = req.is_mla and mla_input == "split"
    key = req.mla_k if req.is_mla and not split_mla else req.k
    tokens, heads, head_dim = key.shape
    no_req_to_token = SimpleNamespace(**{REQ_TO_TOKEN: None})  # only the attention math reads it
    given = dict(
        token_to_kv_pool=req.pool,  # the write door of releases before 0.5.14
        **{REQ_TO_TOKEN_POOL: no_req_to_token},
        out_cache_loc=req.forward_batch.out_cache_loc,
        encoder_out_cache_loc=req.forward_batch.encoder_out_cache_loc,
        **_forward_mode(mode),
        # ForwardBatch's defaults for a batch with no speculative, chunked-prefix or CP state.
        spec_info=None,
        attn_attend_prefix_cache=None,
        attn_cp_metadata=None,
        dcp_kv_mask=None,
        **{ABSENT_ATTENTION_OUTPUT: None},
        **dict.fromkeys(ATTENTION_ONLY_FIELDS),
    )
    # Every field the release's ForwardBatch declares a default for, at that default (a field it
    # added since is read as it ships), then the write's batch as the release's plan bound it
    # (its write ids and physical mark, whatever the release names them); the driver's own values
    # over them.
    bound = vars(req.forward_batch)
    batch = _StandIn("forward_batch", **{**_batch_defaults(), **bound, **given})
    layer = _StandIn(
        "layer",
        **vars(req.layer),
        qk_head_dim=head_dim,
        head_dim=head_dim,
        tp_q_head_num=heads,
        tp_k_head_num=heads,
        tp_v_head_num=req.v.shape[1] if req.v.dim() == 3 else heads,
        scaling=head_dim**-0.5,  # a model's usual softmax scale (hpc_ops accepts no other)
        attn_type=None,
        logit_cap=0.0,
        logit_capping_method="tanh",  # RadixAttention's default
    )
    layer.v_head_dim = req.v.shape[-1] if not req.is_mla else req.layer.v_head_dim
    runner = _StandIn(
        "model_runner",
        device=key.device,
        token_to_kv_pool=req.pool,
        **{REQ_TO_TOKEN_POOL: no_req_to_token},
    )
    driven = _driven(cls, real.construct)
    if real.construct:
        backend = driven(runner)
    else:
        backend = driven.__new__(driven)
        vars(backend).update(
            token_to_kv_pool=req.pool,
            device=key.device,
            use_mla=req.is_mla,
            use_sliding_window_kv_pool=req.use_sliding_window_kv_pool,
            **_declared(real.fields, req, mode),
        )
    own_swa_metadata = real.swa_metadata_method and getattr(cls, real.swa_metadata_method, None)
    if own_swa_metadata:
        own_swa_metadata(backend, padded_loc(req))
    elif real.own_metadata:
        batch.out_cache_loc = padded_loc(req)
        backend.init_forward_metadata(batch)
        batch.out_cache_loc = req.forward_batch.out_cache_loc
    else:
        backend.forward_metadata = _StandIn(
            "forward_metadata",
            swa_out_cache_loc=swa_translation(req),
            **_declared(real.metadata, req, mode),
        )
    query, value = key.new_zeros(tokens, heads * head_dim), req.v
    keywords = {"k_rope": req.k_rope} if split_mla else {}
    if real.shard is not None:  # the batch's tokens, as a server's batch carries its input ids
        setattr(batch, BATCH_INPUT_IDS, key.new_zeros(tokens, dtype=torch.long))
        if mode != "decode":  # an extend's requests, as a server's batch carries them
            vars(batch).update(host_requests(req.forward_batch))
        query, key, value, *rope = real.shard(batch, (query, key, value, *keywords.values()))
        keywords = dict(zip(keywords, rope))
    forward = backend.forward_decode if mode == "decode" else backend.forward_extend
    keywords.update(real.forward_kwargs(req, mode))

    def forward_to_door(where: bool) -> str:
        # Told not to save, every door call is recorded: one that raises is still a call.
        sites: Optional[list[str]] = [] if where or not req.save_kv_cache else None
        try:
            with _stopping_after_write(req.pool, sites), _forward_context(backend):
                forward(
                    query, key, value, layer, batch, save_kv_cache=req.save_kv_cache, **keywords
                )
        except _Written:
            return sites[0] if sites else ""
        except Exception as error:
            if not req.save_kv_cache and not sites:
                # Told not to save, the forward went on to its attention without calling a write
                # door; what the attention then raises on the driver's stand-ins (or a kernel
                # left out) is no write, which is all this call is judged on.
                return ""
            if isinstance(error, StandInUsed):
                raise DriverGap(f"the release's forward calls {error} before its write") from error
            raise
        return ""  # the forward returned without calling a write door

    return forward_to_door
