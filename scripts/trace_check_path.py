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


def trace(pool: str, dtype: str) -> list[str]:
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
            stack.append("" if outside or (stack and not stack[-1]) else module)
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
        stays = ["harness/run/execute.py"] + trace(pool, args.dtype)
        seen = list(dict.fromkeys(stays))
        moves = list(zip(stays, stays[1:]))
        climbs = [(a, b) for a, b in moves if rank(b) > rank(a)]
        returns = sum(module in stays[:i] for i, module in enumerate(stays) if i)
        print(
            f"{pool}: {len(seen)} modules, {len(stays)} stays, {len(climbs)} climbs back up a"
            f" layer, {returns} returns to a module it had left"
        )
        for module in seen:
            print(f"  {module}")
        for below, above in dict.fromkeys(climbs):
            print(f"  climb: {below} -> {above}")


if __name__ == "__main__":
    main()
