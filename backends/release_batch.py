"""The ForwardBatch a write hands its SUT: the SUT's own class where it offers one, filled from
the scenario and, for every other field, the class's own defaults.

A release's `KVWriteLoc.for_batch` (and what calls it) reads whatever fields of its ForwardBatch
it needs; a batch of the harness's own type has only the fields the harness knows, so the next
release's new field would be an AttributeError that says nothing about the release. So the SUT's
class is instantiated without its __init__ (which needs a whole scheduler batch), every field
gets its declared default, the scenario's data is set over them, and the harness's own extras
(the padded loc, the CP group size) ride along. A field the class declares without a default and
the scenario cannot give stays unset: reading it is the harness's gap (the instance carries
HARNESS_FILLED, which harness/compare/error_causes.py reads), never the release's error.

The batch's physical mark is the release's to set: where the SUT offers its plan
(`bind_write_plan`, backends/sglang_names.py), a marked batch is bound by calling it, and an
unmarked one is a batch its plan never bound. Only a SUT without a plan is marked by name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backends.context import ForwardBatch
from backends.sglang_names import mark_without_plan

HARNESS_FILLED = "_kvwrite_harness_filled"


def declared_defaults(cls: type) -> dict[str, Any]:
    """Every field of a dataclass that has a default, with a fresh value of it."""
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if item.default is not dataclasses.MISSING:
            values[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            values[item.name] = item.default_factory()
    return values


def forward_batch(api: Any, physical: bool = True, **values: Any) -> Any:
    """The batch of one write: the SUT's ForwardBatch if its module offers a dataclass of that
    name (a release's, which the SGLang loader puts there), else the harness's own; marked
    physical (`physical`) by the SUT's own plan where it has one."""
    batch = ForwardBatch(physical=physical, **values)
    cls = getattr(api, "ForwardBatch", None)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        harness, batch = batch, cls.__new__(cls)
        vars(batch).update(declared_defaults(cls))
        vars(batch).update(vars(harness))
        vars(batch)[HARNESS_FILLED] = True
    bind = getattr(api, "bind_write_plan", None)
    if bind is None:
        mark_without_plan(batch, physical)
    elif physical:
        bind(batch, batch.token_to_kv_pool)
    return batch
