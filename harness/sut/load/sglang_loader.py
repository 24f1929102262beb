"""Load the real, installed ``sglang`` KV-cache pools as a system under test on CPU.

Nothing in site-packages is edited: unusable third-party modules are replaced by
stand-ins in ``sys.modules`` (see ``sglang_standins``) before sglang is imported.

Another release lives in its own ``--target`` folder (``kvh sut install sglang==X``,
docs/suts.md) and loads with ``load_sglang(sys_path_prefix=DIR)`` in a fresh
subprocess: a process can hold only one ``sglang``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any, Collection, Optional

# Before any release kernel is decorated: on a machine without a GPU the release's Triton
# kernels are interpreted too (TRITON_INTERPRET=1), as the harness's own are, so a door whose
# store is a Triton kernel (MLATokenToKVPoolFP4's) writes here.
import pools.builtin.engines.triton_mode  # noqa: F401,I001
from backends.sglang_names import FORWARD_BATCH_INFO, release_plan_binder
from harness.sut.load import sglang_standins
from harness.sut.load.dcp_rank import as_dcp_rank_pools, pin_dcp_off
from harness.sut.load.gpu_only_stops import import_standing_in
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.optional_pools import offer_optional_pools
from harness.sut.probe.unwrap_helper import unwrap_helper

INSTALL_HINT = "pip install --no-deps sglang==0.5.23 (deps: requirements/sglang-cpu.txt)"
# How many graphs torch.compile keeps per release function (torch's default is 8). A run hands
# the release's compiled quantisers (kvfp4_tensor.py batched_quantize) inputs of three dtypes
# and several layouts, each a recompile; past the limit dynamo runs the function eagerly, and
# eager bf16 arithmetic rounds block_max / 6 to bf16 where the compiled kernel (inductor on a
# CPU, Triton on a GPU) computes in fp32: measured at --profile ci, a block scale one step off
# on 0.5.14 and 0.5.23, a finding that a replay, compiling afresh, did not reproduce.
RELEASE_RECOMPILE_LIMIT = 64

# Parameters that some releases require although the SUT protocol never passes
# them, with the value that keeps the protocol's meaning (0.5.12-0.5.14
# SWAKVPool asserts enable_kvcache_transpose is False).
_NEUTRAL_DEFAULTS: dict[str, dict[str, Any]] = {
    "SWAKVPool": {"enable_kvcache_transpose": False},
}


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"missing module {exc.name!r}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def _with_neutral_defaults(cls: type) -> type:
    """A subclass that fills required-but-unprotocolled constructor keywords, or cls itself."""
    params = inspect.signature(cls.__init__).parameters
    fill = {
        k: v
        for k, v in _NEUTRAL_DEFAULTS.get(cls.__name__, {}).items()
        if k in params and params[k].default is inspect.Parameter.empty
    }
    if not fill:
        return cls

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **{**fill, **kwargs})

    return type(
        cls.__name__,
        (cls,),
        {
            "__init__": __init__,
            "__module__": __name__,
            "__qualname__": cls.__qualname__,
            "neutral_defaults": fill,
        },
    )


def _version(sglang: types.ModuleType) -> str:
    version = getattr(sglang, "__version__", None)
    if version:
        return str(version)
    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _under(path: str | None, directory: str) -> bool:
    return os.path.realpath(path or "").startswith(os.path.realpath(directory) + os.sep)


def _check_prefix(sys_path_prefix: str) -> None:
    if not os.path.isdir(sys_path_prefix):
        raise SutLoadError(f"sys_path_prefix {sys_path_prefix!r} is not a directory")
    loaded = sys.modules.get("sglang")
    if loaded is not None and not _under(loaded.__file__, sys_path_prefix):
        raise SutLoadError(
            f"sglang is already imported from {loaded.__file__}; "
            "load another release in a fresh subprocess"
        )
    if sys.path[:1] != [sys_path_prefix]:
        sys.path.insert(0, sys_path_prefix)
    importlib.invalidate_caches()


def _sglang_origin() -> str | None:
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):  # a finder refusing it, or a spec-less module object
        return None
    return None if spec is None else str(spec.origin)


def _keep_release_functions_compiled() -> None:
    """Raise dynamo's recompile limit to RELEASE_RECOMPILE_LIMIT (never lower it), so that the
    release's torch.compile'd functions run compiled for the whole run, as on a server."""
    from torch._dynamo import config

    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    setattr(config, name, max(getattr(config, name), RELEASE_RECOMPILE_LIMIT))


@dataclass(frozen=True)
class LoadedRelease:
    """What loading a release gives: the SUT module (a namespace of the release's own classes
    under SGLang's names, `real_backends` among them) and why the rest is not here, as data."""

    module: types.SimpleNamespace
    real_code_missing: dict[str, str]  # backend name -> why its class did not import
    unoffered: dict[str, str]  # optional pool class -> why the loader does not offer it
    absent: dict[str, str]  # optional pool class the release does not have -> why
    untried: tuple[str, ...] = ()  # optional pool classes no pool kind of the run asked for


def load_sglang(sys_path_prefix: str | None = None) -> types.SimpleNamespace:
    """The module of load_release: for callers that need only the release's classes."""
    return load_release(sys_path_prefix).module


def load_release(
    sys_path_prefix: str | None = None, kinds: Optional[Collection[str]] = None
) -> LoadedRelease:
    """Import sglang's token-to-KV pools for use on CPU.

    Returns a namespace with MHATokenToKVPool, MLATokenToKVPool, SWAKVPool,
    KVWriteLoc and its unwrap helper as unwrap_write_loc (only where the release has them;
    the helper found by what it does, harness/sut/probe/unwrap_helper.py), version,
    name='sglang', path (the package directory), stood_in (stand-in module
    names), dcp_pinned (whether DCP was pinned off), swa_mla (whether
    SWAKVPool accepts MLA sub-pools), real_backends (backend name -> the
    release's own class, backends/real_code.py) and, where the release has a
    write-loc plan, bind_write_plan (backends/sglang_names.py).
    Raises SutLoadError when sglang is absent or fails to import.
    """
    if sys_path_prefix is not None:
        _check_prefix(sys_path_prefix)
    origin = _sglang_origin()
    if origin is None:
        raise SutLoadError(f"sglang not installed: {INSTALL_HINT}")
    if sys_path_prefix is not None and not _under(origin, sys_path_prefix):
        raise SutLoadError(f"no sglang under {sys_path_prefix}; the import would take {origin}")
    _keep_release_functions_compiled()
    try:
        with warnings.catch_warnings():  # import-time "only CUDA supports X" notices; noise on CPU
            warnings.simplefilter("ignore")
            stood_in = sglang_standins.install()
            gpu_only = _declared_gpu_only()
            already = set(sglang_standins.stood_in(gpu_only))
            sglang = import_standing_in("sglang", gpu_only)
            memory_pool = import_standing_in("sglang.srt.mem_cache.memory_pool", gpu_only)
            swa_memory_pool = import_standing_in("sglang.srt.mem_cache.swa_memory_pool", gpu_only)
            stood_in += [top for top in sglang_standins.stood_in(gpu_only) if top not in already]
        dcp_pinned = pin_dcp_off()
    except Exception as exc:
        raise SutLoadError(f"sglang failed to import: {_one_line(exc)}") from exc

    swa = _with_neutral_defaults(swa_memory_pool.SWAKVPool)
    swa_params = inspect.signature(swa_memory_pool.SWAKVPool.__init__).parameters
    ns = types.SimpleNamespace(
        name="sglang",
        version=_version(sglang),
        path=os.path.dirname(sglang.__file__),
        stood_in=tuple(stood_in),
        dcp_pinned=dcp_pinned,
        MHATokenToKVPool=memory_pool.MHATokenToKVPool,
        MLATokenToKVPool=as_dcp_rank_pools(memory_pool.MLATokenToKVPool),
        SWAKVPool=swa,
        swa_mla="swa_kv_pool_kwargs" in swa_params,
    )
    if hasattr(memory_pool, "KVWriteLoc"):
        ns.KVWriteLoc = memory_pool.KVWriteLoc
        # Offered under the harness's name for its role, whatever the release calls it.
        unwrap = unwrap_helper(memory_pool, memory_pool.KVWriteLoc)
        if unwrap is not None:
            ns.unwrap_write_loc = unwrap
    ns.ForwardBatch = _release_forward_batch()
    bind = release_plan_binder()
    if bind is not None:
        ns.bind_write_plan = bind
    unoffered, absent, untried = offer_optional_pools(ns, gpu_only, kinds)
    # A trial write may have stood in a GPU-only package the import did not need.
    ns.stood_in += tuple(
        top for top in sglang_standins.stood_in(gpu_only) if top not in (*already, *ns.stood_in)
    )
    ns.real_backends, real_code_missing = _real_backends()
    return LoadedRelease(ns, real_code_missing, unoffered, absent, untried)


def _release_forward_batch() -> type | None:
    """The release's own ForwardBatch, which each write's batch is built as (backends/
    release_batch.py); None where its module does not import here (the harness's own is used)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(FORWARD_BATCH_INFO).ForwardBatch
    except Exception:  # noqa: BLE001 - a release whose batch module needs more than this machine
        return None


def _declared_gpu_only() -> dict[str, sglang_standins.StandIn]:
    """The GPU-only packages the real-code backends declare (what their imports read)."""
    from backends.registry import BACKENDS

    declared = [entry.real_code.standins for entry in BACKENDS.values() if entry.real_code]
    return sglang_standins.gpu_only(declared)


def _real_backends() -> tuple[dict[str, type], dict[str, str]]:
    """The release's own backend classes that run on CPU (each registry entry's RealCode,
    backends/real_code.py), and why each one that is not here could not be imported. Their
    GPU-only imports are stood in first, as each backend declares them. Importing them is
    optional: a release whose backend module does not import runs that backend's model."""
    from backends.registry import BACKENDS

    declared = {name: entry.real_code for name, entry in BACKENDS.items() if entry.real_code}
    gpu_only = _declared_gpu_only()
    sglang_standins.install(gpu_only)
    found, missing = {}, {}
    for backend, real in declared.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = import_standing_in(real.module, gpu_only)
                found[backend] = getattr(module, real.cls)
        except Exception as error:  # noqa: BLE001 - any import failure means: run the model
            missing[backend] = f"{real.module} did not import: {_one_line(error)}"
    return found, missing
