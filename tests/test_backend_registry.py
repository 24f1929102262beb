"""Each backend module declares its own registry entries, and the registry collects exactly them."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import backends
from backends.entry import entries_of, register_backend
from backends.registry import BACKEND_MODULES, BACKENDS, backend_paths, collect
from pools.builtin.eras import ERAS

# Modules whose write functions are call sites but not registry backends, and why.
NOT_IN_REGISTRY = {
    "backends.cp_distributed": "the CP site under torch.distributed; harness/cp builds its entry",
}
# The registry's order shows in `kvh matrix` and `kvh run`: each entry's declared order.
ORDER = tuple(
    entry.name
    for entry in sorted(
        (entry for module in BACKEND_MODULES for entry in entries_of(module)),
        key=lambda entry: entry.order,
    )
)


def backend_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"backends.{info.name}")
        for info in pkgutil.iter_modules(backends.__path__)
    ]


def write_functions(module: ModuleType) -> list:
    """Functions defined in `module` with a write site's signature (req, era, mode)."""
    return [
        value
        for value in vars(module).values()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and list(inspect.signature(value).parameters) == ["req", "era", "mode"]
    ]


def test_every_write_function_of_a_backend_module_registers_one_entry():
    checked = 0
    for module in backend_modules():
        if module.__name__ in NOT_IN_REGISTRY:
            assert write_functions(module) and not entries_of(module)
            continue
        registered = {entry.write: entry.name for entry in entries_of(module)}
        assert set(registered) == set(write_functions(module)), module.__name__
        assert len(set(registered.values())) == len(registered), module.__name__
        checked += len(registered)
    assert checked == len(BACKENDS)


def test_the_registry_collects_every_registering_module_in_order():
    registering = {module.__name__ for module in backend_modules() if entries_of(module)}
    assert registering == {module.__name__ for module in BACKEND_MODULES}
    assert tuple(BACKENDS) == ORDER
    assert ORDER[:2] == ("plain", "plain_mla")  # the canonical calls lead every table
    for name, entry in BACKENDS.items():
        assert entry.name == name and entry.write.__module__ in registering
        assert set(entry.eras) <= set(ERAS)


def module_registering(name: str, *entries: tuple[str, int]) -> ModuleType:
    """A module whose write functions register `entries`, each (name, order)."""
    module = ModuleType(name)
    for index, (backend, order) in enumerate(entries):

        def write(req, era, mode):
            return None

        write.__module__, write.__name__ = module.__name__, f"write_{index}"
        setattr(
            module,
            write.__name__,
            register_backend(
                name=backend, order=order, device_type="any", pool_kinds=("mha",), modes=("extend",)
            )(write),
        )
    return module


def test_a_backend_name_registered_twice_is_refused():
    twice = module_registering("backends_twice", ("same", 1), ("same", 2))
    assert [entry.name for entry in entries_of(twice)] == ["same", "same"]
    with pytest.raises(ValueError, match="'same' registered twice"):
        collect((twice,))
    with pytest.raises(ValueError, match="already registers backend 'same'"):
        register_backend(
            name="other", order=3, device_type="any", pool_kinds=("mha",), modes=("extend",)
        )(twice.write_0)


def test_entries_are_sorted_by_their_declared_order_and_an_order_twice_is_refused():
    late, early = module_registering("late", ("b", 20)), module_registering("early", ("a", 10))
    assert list(collect((late, early))) == ["a", "b"]
    with pytest.raises(ValueError, match="'a' and 'c' both declare order 10"):
        collect((early, module_registering("clash", ("c", 10))))


def test_extra_backend_folders_come_from_kvh_backend_paths_only():
    assert backend_paths({}) == () and backend_paths({"KVH_BACKEND_PATHS": ""}) == ()
    joined = os.pathsep.join(["/one", "", "/two"])
    assert backend_paths({"KVH_BACKEND_PATHS": joined}) == (Path("/one"), Path("/two"))
