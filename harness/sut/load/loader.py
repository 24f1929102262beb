"""Turn a `--sut` spec into SGLang-like modules: builtin pools, the installed sglang, or a user's.

A user's module is anything with SGLang's names and signatures (see README, "Test your own
pool"); its era is detected from what it offers.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Optional

from backends import cp_release
from harness.sut.load.load_errors import SutLoadError
from harness.sut.probe.capabilities import Capabilities
from harness.sut.probe.detect import detect, missing_names

# Why a SUT with no package folder offers no CP write: a user's module is no release.
NOT_A_RELEASE = "not a release"


@dataclass(frozen=True)
class LoadedSut:
    spec: str
    module: Any
    era: Optional[str]  # None: its capabilities fit no modelled call convention (see `unfit`)
    engine: str = "-"
    version: str = ""
    capabilities: Optional[Capabilities] = None
    unfit: str = ""  # what is missing for any modelled call convention
    root: Optional[str] = None  # the folder holding its `sglang` package, for the call-site census
    real_code: tuple[str, ...] = ()  # backends whose own release code its cells drive
    real_code_missing: tuple[tuple[str, str], ...] = ()  # (backend, why its code did not import)
    # Its module is a worker process's client (harness/sut/worker/client.py IsolatedSut): a
    # candidate of it executes there, only differing bytes travelling back.
    in_worker: bool = False
    # The pool classes it offers by SGLang's name (its module's, or its worker's hello): a pool kind
    # whose class it lacks is skipped (pools/builtin/layouts/kinds.py class_name_of). None: what its
    # module has (`offered_pool_classes`).
    offered: Optional[tuple[str, ...]] = None
    # (class, why its loader does not offer it): harness/sut/load/optional_pools.py
    unoffered: tuple[tuple[str, str], ...] = ()
    # (class, why the SUT does not have it at all): a release's optional pool it lacks or has in
    # another design. Its kind's cells cannot apply (reports/outcome.py SkipKind.NOT_OFFERED).
    absent: tuple[tuple[str, str], ...] = ()
    # Optional pool classes its loader did not try, as no pool kind of the run asks for them
    # (harness/sut/load/optional_pools.py): not offered to this run, but not known to fail here.
    untried: tuple[str, ...] = ()
    # kvh run's CP group for a release's context-parallel cells (harness/sut/worker/cp_group.py),
    # not started until its first request; None where the run gives none.
    cp_group: Optional[Any] = field(default=None, compare=False)
    # Why a release offers no CP write to drive on a group ("" where it does; backends/
    # cp_release.py not_offered); a user's module is no release.
    no_cp_write: str = NOT_A_RELEASE

    def to_dict(self) -> dict[str, Any]:
        """What a worker tells its parent of the SUT it loaded (its hello), as plain JSON values;
        the module stays in the worker."""
        return {
            "spec": self.spec,
            "era": self.era,
            "engine": self.engine,
            "version": self.version,
            "capabilities": self.capabilities.to_dict() if self.capabilities else None,
            "unfit": self.unfit,
            "root": self.root,
            "real_code": list(self.real_code),
            "real_code_missing": [list(pair) for pair in self.real_code_missing],
            "offered": None if self.offered is None else list(self.offered),
            "unoffered": [list(pair) for pair in self.unoffered],
            "untried": list(self.untried),
            "absent": [list(pair) for pair in self.absent],
            "no_cp_write": self.no_cp_write,
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any], module: Any, in_worker: bool = True) -> LoadedSut:
        """The SUT a worker described (to_dict), driven through `module` (its client)."""
        capabilities = values.get("capabilities")
        offered = values.get("offered")
        return cls(
            values["spec"],
            module,
            values["era"],
            engine=values.get("engine", "-"),
            version=values.get("version", ""),
            capabilities=Capabilities.from_dict(capabilities) if capabilities else None,
            unfit=values.get("unfit", ""),
            root=values.get("root"),
            real_code=tuple(values.get("real_code", ())),
            real_code_missing=tuple(map(tuple, values.get("real_code_missing", ()))),
            in_worker=in_worker,
            offered=None if offered is None else tuple(offered),
            unoffered=tuple(map(tuple, values.get("unoffered", ()))),
            absent=tuple(map(tuple, values.get("absent", ()))),
            untried=tuple(values.get("untried", ())),
            no_cp_write=values.get("no_cp_write", NOT_A_RELEASE),
        )

    def offers(self, name: str) -> bool:
        offered = self.offered if self.offered is not None else offered_pool_classes(self.module)
        return name in offered

    @property
    def unfit_reason(self) -> str:
        """Why it is not run when its era is None."""
        return (
            f"SUT {self.spec}: its capabilities fit no modelled call convention "
            f"(missing: {self.unfit})"
        )


def offered_pool_classes(module: Any) -> tuple[str, ...]:
    """The pool kinds' SGLang classes `module` has."""
    from pools.builtin.layouts.kinds import class_name_of
    from scenarios.model import POOL_KINDS

    return tuple(sorted({name for name in map(class_name_of, POOL_KINDS) if hasattr(module, name)}))


def parse_builtin(spec: str) -> Optional[str]:
    """'builtin' -> '' (all engines), 'builtin:torch' -> 'torch', anything else -> None."""
    if spec == "builtin":
        return ""
    if spec.startswith("builtin:"):
        return spec.split(":", 1)[1]
    return None


def _import_file(path: Path) -> Any:
    name = f"kvh_sut_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SutLoadError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def package_root(module: Any) -> Optional[str]:
    """The folder that holds an SGLang-like package's source (sglang's loader records `path`)."""
    path = getattr(module, "path", None)
    return str(Path(path).parent) if path else None


def unfound(spec: str) -> str:
    """Why a user's `.py` file or dotted module cannot be found, found without running any of
    it ("" where it can be): so a worker is started only for a SUT that exists."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        return "" if path.is_file() else f"SUT file {spec} does not exist"
    top = spec.split(".", 1)[0]
    try:
        found = bool(top) and importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    return "" if found else f"SUT {spec!r} failed to import: No module named {top!r}"


def load_foreign(
    spec: str, prefix: Optional[str] = None, kinds: Optional[Collection[str]] = None
) -> LoadedSut:
    """Load `sglang`, a .py file or a dotted module, and probe its capabilities and era. `prefix`
    (a SUT worker's environment folder) goes in front of sys.path. `kinds`: the pool kinds the
    run plans (None: every kind), for a release's optional pools (optional_pools.py)."""
    real_code_missing: dict[str, str] = {}
    unoffered: dict[str, str] = {}
    absent: dict[str, str] = {}
    untried: tuple[str, ...] = ()
    try:
        if prefix and spec != "sglang":  # sglang's loader checks that the import is the prefix's
            sys.path.insert(0, prefix)
        if spec == "sglang":
            from harness.sut.load.sglang_loader import load_release

            release = load_release(prefix, kinds)
            module, real_code_missing, unoffered, absent, untried = (
                release.module,
                release.real_code_missing,
                release.unoffered,
                release.absent,
                release.untried,
            )
        elif spec.endswith(".py") or Path(spec).exists():
            reason = unfound(spec)
            if reason:
                raise SutLoadError(reason)
            module = _import_file(Path(spec))
        else:
            module = importlib.import_module(spec)
    except SutLoadError:
        raise
    except Exception as error:  # any import-time failure of user code is a usage error
        raise SutLoadError(
            f"SUT {spec!r} failed to import: {type(error).__name__}: {error}"
        ) from None
    missing = missing_names(module)
    if missing:
        raise SutLoadError(
            f"SUT {spec!r} lacks {', '.join(missing)} (see README: Test your own pool)"
        )
    era, capabilities, unfit = detect(module)
    root = package_root(module)
    return LoadedSut(
        spec,
        module,
        era,
        version=str(getattr(module, "version", "")),
        capabilities=capabilities,
        unfit=unfit,
        root=root,
        no_cp_write=cp_release.not_offered() if root else NOT_A_RELEASE,
        # A user's module may name release backend classes too (backends/real_code.py).
        real_code=tuple(getattr(module, "real_backends", None) or ()),
        real_code_missing=tuple(real_code_missing.items()),
        offered=offered_pool_classes(module),
        unoffered=tuple(unoffered.items()),
        absent=tuple(absent.items()),
        untried=untried,
    )
