"""The pool classes the SGLang loader offers beyond the SUT protocol's three (their records:
harness/sut/load/optional_pool_records.py): each is offered where the release's module defines
what it is built from, behind the SUT protocol's constructor keywords, so the pool kinds that
name it (pools/builtin/layouts/kinds.py) run on the release's own class. The write-door census
(harness/sut/probe/write_doors.py) reads `offered_classes` to say which doors those kinds drive.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Collection, Mapping, Optional

import torch

from backends.sglang_names import release_plan_binder
from harness.compare.error_causes import harness_cause
from harness.sut.load.gpu_only_stops import IMPORT_ROUNDS, stood_in_stop
from harness.sut.load.optional_pool_records import OPTIONAL_POOLS, OptionalPool
from harness.sut.load.release_constructors import NotTheDesign
from harness.sut.load.sglang_standins import StandIn
from harness.sut.probe.detect import REQUIRED_NAMES
from harness.sut.probe.door_behaviour import refuses_unmarked
from pools.kinds.registry import KINDS


def _marked(module: ModuleType, class_name: str, mark: str) -> bool:
    owner, _, attribute = mark.rpartition(".")
    return bool(getattr(getattr(module, owner or class_name), attribute, False))


def _absent(pool: OptionalPool, module: ModuleType) -> str:
    """Why the release has no `pool.name` of the design its kind models ("" when it has): a
    combination that cannot apply, never a skip."""
    if not all(hasattr(module, part) for part in pool.parts):
        return f"{pool.module} has no {', '.join(pool.parts)}"
    # A class the release names as the kind does, or the constructor built over its own class.
    cls = getattr(module, pool.name, None) or pool.build(module)
    bind = release_plan_binder() if pool.refusal_row else None
    if bind is not None:
        make_pool = functools.partial(pool.build(module), **pool.trial)
        if refuses_unmarked(make_pool, module.KVWriteLoc, bind, pool.refusal_row) is False:
            return f"its {pool.name} writes a loc no plan marked: not the design the kind models"
    elif missing := [mark for mark in pool.marks if not _marked(module, pool.name, mark)]:
        # No plan to run the pool with: its own word, read only here.
        return f"its {pool.name} has no {', '.join(missing)}: not the design the kind models"
    for method, parameter in pool.parameters:
        if parameter not in inspect.signature(getattr(cls, method)).parameters:
            return f"its {pool.name}.{method} takes no {parameter}: not the call the kind models"
    return ""


def _why_not(pool: OptionalPool, module: ModuleType, gpu_only: Mapping[str, StandIn]) -> str:
    """Why the release's `pool.name`, which it has, is not offered here ("" when it is). A
    GPU-only import its trial write stops on is stood in from `gpu_only`, and it writes again.
    A trial write that fails is a reason only where this machine or the harness caused it
    (harness/compare/error_causes.py: a module it lacks, a stand-in, a GPU runtime, an object the
    harness built); any other raise is the door's, for the checks to judge."""
    cls = getattr(module, pool.name, None) or pool.build(module)
    taken = inspect.signature(cls).parameters
    trial = {**pool.trial, **{name: value for name, value in pool.trial_if_taken if name in taken}}
    try:
        built = pool.build(module)(**trial)
    except NotTheDesign:
        raise  # another design under the name: absent, not a class that fails here
    except Exception as error:  # noqa: BLE001 - any failure means: it does not construct here
        return f"its {pool.name} does not construct here: {type(error).__name__}: {error}"[:300]
    if pool.trial_write_layer is None:
        return ""
    layer = SimpleNamespace(layer_id=pool.trial_write_layer, is_cross_attention=False)
    row = torch.ones((1, 1, 16), dtype=torch.bfloat16)
    for _ in range(IMPORT_ROUNDS):
        try:
            built.set_kv_buffer(layer, torch.tensor([1]), row, row.clone())
            return ""
        except Exception as error:  # noqa: BLE001 - judged below: this machine's, or the door's
            # The door's first write imports what it needs (0.5.9's FP4 door: the CUDA-graph
            # runner, whose chain reaches sgl_kernel.kvcacheio): stood in as a check's write is.
            if isinstance(error, ImportError) and stood_in_stop(error, gpu_only):
                continue
            if harness_cause(error) is None:
                # The release's own door raised (a ZeroDivisionError in its index, say): offered,
                # so that its checks judge it. Not offering it would turn a broken door into
                # skips and the run into a PASS.
                return ""
            return f"its {pool.name} does not write here: {type(error).__name__}: {error}"[:300]
    return f"its {pool.name} does not write here: its imports stopped {IMPORT_ROUNDS} times"


def offer_optional_pools(
    namespace: SimpleNamespace,
    gpu_only: Mapping[str, StandIn],
    kinds: Optional[Collection[str]] = None,
) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """Set each optional pool the imported release has and that constructs here on the loader's
    namespace (`gpu_only`: the GPU-only packages a trial write may stand in). Returns why each
    one it has is not offered here, and why each one it does not have (no module, no class,
    another design) is absent (class name -> reason): for the latter the kind cannot apply,
    which the plan counts apart from skips. `kinds`: the pool kinds the run plans (None: every
    kind); a class whose trial writes and that none of them asks for is not tried (0.5.23's FP4
    trial compiles the release's quantiser, about 3 s of every load) and not offered: the third
    value names those."""
    asked = None if kinds is None else {KINDS[name].sglang_class for name in kinds if name in KINDS}
    missing: dict[str, str] = {}
    absent: dict[str, str] = {}
    untried: list[str] = []
    for pool in OPTIONAL_POOLS:
        try:
            module = importlib.import_module(pool.module)
        except ModuleNotFoundError as error:
            if error.name and pool.module.startswith(error.name):
                absent[pool.name] = f"the release has no {pool.module}"
            else:
                missing[pool.name] = f"{pool.module} does not import: {error}"
            continue
        except Exception as error:  # noqa: BLE001 - a module the release has, failing here
            missing[pool.name] = f"{pool.module} does not import: {error}"
            continue
        why_absent = _absent(pool, module)
        if why_absent:
            absent[pool.name] = why_absent
            continue
        if asked is not None and pool.trial_write_layer is not None and pool.name not in asked:
            untried.append(pool.name)
            missing[pool.name] = f"its {pool.name} was not tried: no kind of the run asks for it"
            continue
        try:
            why = _why_not(pool, module, gpu_only)
        except NotTheDesign as error:
            absent[pool.name] = f"its {pool.name} is not the design the kind models: {error}"
            continue
        if why:
            missing[pool.name] = why
        else:
            setattr(namespace, pool.name, pool.build(module))
    return missing, absent, tuple(untried)


def offered_classes(root: Path) -> tuple[str, ...]:
    """The pool classes the loader offers from the release under `root` (the folder holding
    `sglang/`), read from its source so that an unimportable release is described too (its
    classes' marks are read as text; whether they construct is only known once loaded)."""
    offered = list(REQUIRED_NAMES)
    for pool in OPTIONAL_POOLS:
        if not pool.offered_from_source:
            continue
        path = root.joinpath(*pool.module.split(".")).with_suffix(".py")
        text = path.read_text(errors="replace") if path.is_file() else ""
        marks = tuple(mark.rpartition(".")[2] for mark in pool.marks) + tuple(
            parameter for _, parameter in pool.parameters
        )
        if all(re.search(rf"^class {part}\b", text, re.MULTILINE) for part in pool.parts) and all(
            mark in text for mark in (*marks, *pool.source_words)
        ):
            offered.append(pool.name)
    return tuple(offered)
