"""Each backend module declares its own registry entries, and the registry collects exactly them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import backends
from backends.entry import entries_of, register_backend
from backends.registry import BACKEND_MODULES, BACKENDS, collect
from pools.eras import ERAS

# Modules whose write functions are call sites but not registry backends, and why.
NOT_IN_REGISTRY = {
    "backends.cp_distributed": "the CP site under torch.distributed; harness/cp builds its entry",
}
# The registry's order shows in `kvh matrix` and `kvh run`.
ORDER = (
    "plain",
    "plain_mla",
    "fa3",
    "triton",
    "flashinfer",
    "trtllm_mha",
    "aiter",
    "xpu",
    "musa",
    "torch_native",
    "intel_amx",
    "ascend",
    "flashinfer_mla",
    "flashmla",
    "trtllm_mla",
    "cp",
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
    for name, entry in BACKENDS.items():
        assert entry.name == name and entry.write.__module__ in registering
        assert set(entry.eras) <= set(ERAS)


def test_a_backend_name_registered_twice_is_refused():
    twice = ModuleType("backends_twice")

    def first(req, era, mode):
        return None

    def second(req, era, mode):
        return None

    for function in (first, second):
        function.__module__ = twice.__name__
        setattr(
            twice,
            function.__name__,
            register_backend(
                name="same", device_type="any", pool_kinds=("mha",), modes=("extend",)
            )(function),
        )
    assert [entry.name for entry in entries_of(twice)] == ["same", "same"]
    with pytest.raises(ValueError, match="'same' registered twice"):
        collect((twice,))
    with pytest.raises(ValueError, match="already registers backend 'same'"):
        register_backend(name="other", device_type="any", pool_kinds=("mha",), modes=("extend",))(
            first
        )
