"""Stand-in modules that let the installed ``sglang`` import on a CPU-only machine.

Importing ``sglang.srt.mem_cache.memory_pool`` drags in serving, multimodal and
kernel modules whose third-party imports are heavy, GPU-only or absent from our
small dependency set. None of them is used by the KV-cache write path, so each
is replaced by an empty module carrying just the names read at import time.
Every name is a placeholder that raises if actually used, so a stand-in that
leaks into a code path we exercise fails loudly instead of faking a result.

Policy per top-level package:
- ``missing``: stand in only when the real package does not import, so a real,
  working install always wins.
- ``always``: stand in unless a module of that name is already loaded.

A GPU-only package (the real-code backends declare what their imports read, gpu_only) is also
stood in where an import stops on it uncaught, with the submodule or name it stopped on
(harness/sut/load/gpu_only_stops.py).
"""

from __future__ import annotations

import enum
import importlib
import importlib.machinery
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from backends.real_code import StandInUsed

CLASS = "class"  # placeholder class: subclassable, raises when instantiated
FUNC = "func"  # placeholder callable: raises when called
DECORATOR = "decorator"  # @x and @x(...) both work; the decorated kernel raises if launched
INERT = "inert"  # class whose instances accept any arguments and do nothing (e.g. triton.Config)
ERROR = "error"  # placeholder exception class, so `except X:` stays valid
MODEL = (
    "model"  # empty pydantic model: usable as a field type in sglang's pydantic protocol classes
)


@dataclass(frozen=True)
class StandIn:
    policy: str  # "missing" | "always"
    modules: dict[str, dict[str, Any]]  # module name -> {attribute: CLASS | FUNC | value}
    why: str
    before: Callable[[], None] | None = None  # runs once, just before registration
    # GPU-only: a submodule or name of it that stops an import is stood in too (stand_in_stop).
    serves_submodules: bool = False


def _interpolation_mode() -> type:
    # transformers builds dicts keyed by these members at import time, so the
    # members must be real, hashable and distinct.
    return enum.Enum(
        "InterpolationMode",
        {
            n.upper().replace("-", "_"): n
            for n in (
                "nearest",
                "nearest-exact",
                "bilinear",
                "bicubic",
                "box",
                "hamming",
                "lanczos",
            )
        },
    )


_TORCHVISION_MODE = _interpolation_mode()

# Module tree -> the names its importers read at import time, on 0.5.12, 0.5.13,
# 0.5.14 and 0.5.23 (how they were measured: docs/suts.md).
STANDINS: dict[str, StandIn] = {
    # all releases: sglang/utils.py `from IPython.display import HTML, display` (notebook helpers).
    "IPython": StandIn(
        "missing",
        {"IPython": {}, "IPython.display": {"HTML": CLASS, "display": FUNC}},
        "notebook display helpers; heavy and not in our dependency set",
    ),
    # all releases: sglang/utils.py imports the HTTP client; no name is read at import.
    "aiohttp": StandIn("missing", {"aiohttp": {}}, "HTTP client of the frontend language"),
    # all releases: configs/internvl.py reads spm.SentencePieceProcessor; a native wheel.
    "sentencepiece": StandIn(
        "missing",
        {"sentencepiece": {"SentencePieceProcessor": CLASS}},
        "tokenizer of some model configs",
    ),
    # 0.5.23: sglang.kernels JIT wrappers name tvm_ffi types; those kernels are CUDA-only.
    "tvm_ffi": StandIn(
        "missing", {"tvm_ffi": {"Module": CLASS, "Object": CLASS}}, "FFI of the CUDA JIT kernels"
    ),
    # <= 0.5.14: server_args -> function_call parsers; tool-call parsing is server-only.
    "partial_json_parser": StandIn(
        "missing",
        {
            "partial_json_parser": {},
            "partial_json_parser.core": {},
            "partial_json_parser.core.options": {"Allow": CLASS},
            "partial_json_parser.core.exceptions": {"MalformedJSON": ERROR},
        },
        "tool-call parsing in the server",
    ),
    # sglang-kt 0.7.2 (a fork): server_args -> function_call_parser validates tool-call schemas
    # with jsonschema, which the fork imports at load time but does not declare.
    "jsonschema": StandIn(
        "missing",
        {"jsonschema": {"Draft202012Validator": CLASS, "ValidationError": ERROR}},
        "tool-call schema validation in the server",
    ),
    # <= 0.5.14: model/attention code does `import einops`; models are never built here.
    "einops": StandIn("missing", {"einops": {}}, "tensor rearranging in model code"),
    # all releases import zmq (scheduler IPC); 0.5.23 also the socket authenticator.
    "zmq": StandIn(
        "missing",
        {
            "zmq": {"Socket": CLASS},  # 0.5.23 backends' import chain annotates with zmq.Socket
            "zmq.asyncio": {},
            "zmq.auth": {},
            "zmq.auth.thread": {"ThreadAuthenticator": CLASS},
        },
        "scheduler IPC",
    ),
    # <= 0.5.14: server_args -> function_call -> entrypoints.openai.protocol builds
    # pydantic models over openai's response types (0.5.23 no longer imports it).
    "openai": StandIn(
        "missing",
        {
            "openai": {},
            "openai.types": {},
            "openai.types.responses": {
                n: MODEL
                for n in (
                    "ResponseFunctionToolCall",
                    "ResponseInputItemParam",
                    "ResponseOutputItem",
                    "ResponseOutputMessage",
                    "ResponseOutputText",
                    "ResponseReasoningItem",
                )
            },
            "openai.types.responses.response": {"ToolChoice": MODEL},
            "openai.types.responses.tool": {"Tool": MODEL},
        },
        "OpenAI-compatible server protocol types",
    ),
    # Only when triton does not import. A real triton 3.7 imports fine on a CPU-only
    # machine and nothing launches its kernels there (the pools take their torch
    # fallbacks on CPU), so the real one is preferred. Without it, sglang's kernel
    # modules still run `@triton.jit` & co. at import time. torch probes
    # `import triton` too and would take a stand-in for a working triton, so torch
    # settles on "no triton" before the stand-in is registered.
    "triton": StandIn(
        "missing",
        {
            "triton": {"jit": DECORATOR, "autotune": DECORATOR, "Config": INERT},
            "triton.language": {
                "constexpr": INERT,
                "tensor": INERT,
                "exp": FUNC,
                "log": FUNC,
                "log2": FUNC,
            },  # <= 0.5.14 fla/op.py aliases these
            "triton.language.core": {"_aggregate": lambda cls: cls},  # a class decorator
            "triton.language.math": {"exp2": FUNC},
            "triton.language.extra": {},
            "triton.language.extra.libdevice": {},
            "triton.experimental": {},
            "triton.experimental.gluon": {},
            "triton.experimental.gluon.language": {},
            "triton.tools": {},
            "triton.tools.tensor_descriptor": {"TensorDescriptor": CLASS},
        },
        "GPU kernel compiler",
        before=lambda: _settle_torch_without_triton(),
    ),
    # Always: the PyPI torchvision wheel is built for CUDA torch and does not load
    # next to torch+cpu. configs/ and transformers.image_utils import it at module
    # level; `__version__` keeps transformers' version probe parseable.
    "torchvision": StandIn(
        "always",
        {
            "torchvision": {"__version__": "0.0.0"},
            "torchvision.io": {"ImageReadMode": CLASS, "decode_image": FUNC, "decode_jpeg": FUNC},
            "torchvision.transforms": {"InterpolationMode": _TORCHVISION_MODE},
            "torchvision.transforms.functional": {
                "InterpolationMode": _TORCHVISION_MODE,
                "pil_to_tensor": FUNC,
            },
            "torchvision.transforms.v2": {},
            "torchvision.transforms.v2.functional": {},
        },
        "multimodal preprocessing",
    ),
    # Always (>= 0.5.14): the first write lazily imports the model runner for
    # get_is_capture_mode() alone; the real module drags in the CUDA-graph runner.
    # No graph is ever captured here, so the answer is False.
    "sglang.srt.model_executor.runner": StandIn(
        "always",
        {
            "sglang.srt.model_executor.runner": {"get_is_capture_mode": lambda: False},
        },
        "CUDA-graph capture flag read on the first write",
    ),
}


def _settle_torch_without_triton() -> None:
    # torch decides once whether triton exists (cached probes and module-level
    # `try: import triton`). sglang calls torch.compile at import time, which loads
    # dynamo/inductor; building one compiled wrapper now loads them while triton is
    # truly absent, so they cache "no triton" and never meet the stand-in.
    import torch
    from torch.utils import _triton

    _triton.has_triton_package()
    _triton.get_triton_version()
    torch.compile(lambda x: x)


class _Kernel:
    """What a stand-in triton decorator returns: keeps the Python function, refuses launches."""

    def __init__(self, qual: str, fn: Any) -> None:
        self.fn, self.__name__, self._qual = fn, getattr(fn, "__name__", "kernel"), qual

    def __getitem__(self, _grid: Any) -> Any:
        return self.__call__

    def __call__(self, *_a: Any, **_k: Any) -> Any:
        raise StandInUsed(f"{self._qual} (a kvwrite-harness stand-in: no kernel can launch)")


def placeholder(module: str, name: str, kind: Any) -> Any:
    qual = f"{module}.{name}"

    def fail(*_a: Any, **_k: Any) -> Any:
        raise StandInUsed(f"{qual} (a kvwrite-harness stand-in for a module absent here)")

    if kind == CLASS:
        return type(name, (), {"__init__": fail, "__module__": module})
    if kind == MODEL:
        import pydantic  # deferred: only older releases need it, and pydantic is slow to import

        return type(name, (pydantic.BaseModel,), {"__module__": module})
    if kind == ERROR:
        return type(name, (Exception,), {"__module__": module})
    if kind == INERT:
        return type(name, (), {"__init__": lambda self, *a, **k: None, "__module__": module})
    if kind == DECORATOR:

        def decorate(*args: Any, **_k: Any) -> Any:
            if len(args) == 1 and callable(args[0]) and not _k:
                return _Kernel(qual, args[0])
            return lambda fn: _Kernel(qual, fn)

        return decorate
    if kind == FUNC:
        fail.__name__ = name
        return fail
    return kind


def gpu_only(declared: Iterable[Mapping[str, Mapping[str, str]]]) -> dict[str, StandIn]:
    """The stand-ins the real-code backends declare (module -> names their import reads), merged
    into one entry per top-level package: several backends stand in parts of sgl_kernel."""
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for modules in declared:
        for module, names in modules.items():
            top = module.split(".", 1)[0]
            merged.setdefault(top, {}).setdefault(module, {}).update(names)
    return {
        top: StandIn("missing", modules, "GPU-only package a real-code backend imports", None, True)
        for top, modules in merged.items()
    }


def make_module(name: str, attrs: dict[str, Any]) -> types.ModuleType:
    mod = types.ModuleType(name, f"kvwrite-harness stand-in for {name}")
    # A spec keeps importlib.util.find_spec (used by transformers' availability
    # probes) from raising on a module without one; __path__ makes it a package.
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    mod.__path__ = []
    mod.__kvwrite_standin__ = True
    for attr, kind in attrs.items():
        setattr(mod, attr, placeholder(name, attr, kind))
    return mod


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except Exception:  # a broken install counts as missing, whatever it raises
        return False


def install(extra: dict[str, StandIn] | None = None) -> list[str]:
    """Register the needed stand-ins in sys.modules (idempotent).

    Returns the top-level names that are stand-ins afterwards.
    """
    table = {**STANDINS, **(extra or {})}
    for top, entry in table.items():
        if sys.modules.get(top) is not None:
            continue  # already loaded: a real module, or our stand-in from an earlier call
        if entry.policy == "missing" and _importable(top):
            continue
        if entry.before is not None:
            entry.before()
        for name, attrs in entry.modules.items():
            sys.modules[name] = make_module(name, attrs)
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and parent in entry.modules:
                setattr(sys.modules[parent], child, sys.modules[name])
        if entry.serves_submodules:
            sys.modules[top].__kvwrite_gpu_only__ = True
    return stood_in(table)


def stood_in(table: Mapping[str, StandIn]) -> list[str]:
    """The top-level packages of `table` that are stand-ins in this process now."""
    return [top for top in table if is_standin(sys.modules.get(top))]


def is_standin(module: object) -> bool:
    return getattr(module, "__kvwrite_standin__", False)
