"""Which of the project's modules one check passes through to find a pool's buffers, and how
often it climbs back up a layer (issue "a pool kind owns its buffers").

One builtin `prefill` check of each pool kind named runs through `execute` under
`sys.setprofile`. The pool under test and the call site are the SUT's own code, not the harness's
way to its bytes, so calls into them (and what they call) are left out; what is left is the way
from `execute` to the bytes compared: the pool cache, the canary, the snapshot, and whatever they
ask about the kind. A stay is an entry into a module from another; a climb is a call from a module
of a lower layer into a higher one (pools < scenarios < backends < harness; in harness, compare <
sut < plan, report < run < cli).

    python scripts/trace_check_path.py dsv4 swa_unified minimax_m3_nvfp4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.plan.candidate import Candidate
from harness.run.execute import execute
from pools.builtin.sut import builtin_module
from scenarios.defaults import default_scenarios

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("pools", "scenarios", "backends", "harness")
HARNESS_ROLES = ("compare", "sut", "plan", "report", "run", "cli")
# The SUT's own code: its pools (every pools/ module but the kind records) and its call sites.
SUT_CODE = ("pools/", "backends/", "mutants/")
PROJECT = ("pools/", "backends/", "mutants/", "scenarios/", "harness/", "reports/")
KIND_RECORDS = ("pools/kinds/",)


def module_of(filename: str) -> str:
    try:
        return str(Path(filename).resolve().relative_to(ROOT))
    except ValueError:
        return ""


def is_sut(module: str) -> bool:
    return module.startswith(SUT_CODE) and not module.startswith(KIND_RECORDS)


def rank(module: str) -> tuple[int, int]:
    top = module.split("/")[0]
    role = module.split("/")[1] if top == "harness" and "/" in module else ""
    roles = {"plan": 2, "report": 2, "run": 4, "cli": 5, "compare": 0, "sut": 1}
    return LAYERS.index(top) if top in LAYERS else -1, roles.get(role, -1)


def trace(pool: str, dtype: str, calls: list[tuple[str, str]]) -> list[str]:
    """The stays of one check of `pool` (each time execution changes module), and into `calls`
    each call from one of the project's modules into another (caller, callee)."""
    scenario = next(s for s in default_scenarios(pool, dtype, 0) if s.name == "prefill")
    from backends.registry import BACKENDS

    backend = next(b for b in BACKENDS.values() if pool in b.pool_kinds)
    candidate = Candidate(
        "builtin", builtin_module("current", "torch"), "current", "torch", "cpu", backend.name
    )
    stays: list[str] = []  # the module execution is in, each time it changes
    stack: list[str] = []  # per Python frame: its project module, or "" (the SUT's, a library's)

    def profile(frame, event, _arg):
        if event == "call":
            module = module_of(frame.f_code.co_filename)
            outside = not module.startswith(PROJECT) or is_sut(module)
            caller = stack[-1] if stack else ""
            stack.append("" if outside or (stack and not caller) else module)
            if stack[-1] and caller and caller != stack[-1]:
                calls.append((caller, stack[-1]))
        elif event == "return" and stack:
            stack.pop()
        else:
            return
        here = stack[-1] if stack else ""
        if here and (not stays or stays[-1] != here):
            stays.append(here)

    sys.setprofile(profile)
    try:
        execute(candidate, scenario, timeout_s=None)
    finally:
        sys.setprofile(None)
    return stays[1:]  # after execute's own module is entered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pools", nargs="+")
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    for pool in args.pools:
        calls: list[tuple[str, str]] = []
        stays = ["harness/run/execute.py"] + trace(pool, args.dtype, calls)
        seen = list(dict.fromkeys(stays))
        edges = list(dict.fromkeys(calls))
        up = [(a, b) for a, b in edges if rank(b) > rank(a)]
        returns = sum(module in stays[:i] for i, module in enumerate(stays))
        print(
            f"{pool}: {len(seen)} modules; {len(edges)} module-to-module calls ({len(up)} up to a"
            f" higher layer); {len(stays)} stays, {returns} of them returns to a module it had left"
        )
        for module in seen:
            print(f"  {module}")
        for caller, callee in edges:
            print(f"  {'UP ' if (caller, callee) in up else ''}{caller} -> {callee}")


if __name__ == "__main__":
    main()
