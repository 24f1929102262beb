"""`kvh cp`: the context-parallel write under torch.distributed, every rank's pool judged against
the single-process write; `kvh cp --repro FILE` replays a saved CP finding."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from harness.cli.arguments import csv_list, positive_float, seed_int
from harness.cp.cp_output import by_cell, cell_record, failed_checks, report_group
from harness.cp.cp_repro import replay_and_report, save_cp_repro
from harness.cp.differential import CP_POOLS, DEFAULT_SITE, default_plan, load_site, run_group
from harness.cp.distributed import PROCESS_GROUP_BACKENDS
from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.sut.load.environments import checked_out, is_isolated_spec, not_ready_reason
from harness.sut.load.load_errors import SutLoadError
from pools.builtin.engines import ENGINES
from pools.builtin.eras import ERAS
from reports.store import append, run_meta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--world", type=csv_list, default=["2", "4"], help="group sizes (default 2,4)"
    )
    parser.add_argument(
        "--pools", type=csv_list, default=list(CP_POOLS), help=f"of {','.join(CP_POOLS)}"
    )
    parser.add_argument("--eras", type=csv_list, default=list(ERAS), help=f"of {','.join(ERAS)}")
    parser.add_argument(
        "--engine", default="torch", help=f"builtin store engine ({', '.join(ENGINES)})"
    )
    parser.add_argument("--sut", default="builtin", help="builtin, sglang, a module or a .py file")
    parser.add_argument(
        "--site",
        default=DEFAULT_SITE,
        help="the CP call site: a module or .py file with write(req, era, mode)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        choices=sorted(PROCESS_GROUP_BACKENDS),
        help="device type of the ranks: cpu (gloo), cuda (nccl), npu (hccl)",
    )
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument(
        "--timeout", type=positive_float, default=120.0, help="seconds for the whole group"
    )
    parser.add_argument("--out", type=Path, default=Path("kvh-out/cp"), help="repros and results")
    parser.add_argument("--repro", type=Path, help="replay this CP repro file instead of a run")
    parser.set_defaults(handler=main)


def _run(arguments: argparse.Namespace) -> int:
    try:
        worlds = [int(world) for world in arguments.world]
        unknown = sorted(set(arguments.pools) - set(CP_POOLS)) + sorted(
            set(arguments.eras) - set(ERAS)
        )
        if unknown or min(worlds) < 1 or arguments.engine not in ENGINES:
            raise ValueError(
                f"unknown pools, eras or engine {unknown or arguments.engine}, or a world < 1"
            )
        load_site(arguments.site)
        if is_isolated_spec(arguments.sut):  # before any rank starts: exit 2, one line
            reason = not_ready_reason(checked_out(arguments.sut))
            if reason:
                raise ValueError(reason)
    except (ValueError, ImportError) as error:
        raise UsageError(str(error)) from None
    plan = default_plan(
        tuple(arguments.pools),
        arguments.seed,
        eras=tuple(arguments.eras),
        engine=arguments.engine,
        sut=arguments.sut,
        site=arguments.site,
        device_type=arguments.device,
    )
    meta = run_meta(arguments.device, arguments.seed, profile="cp")
    failed = False
    for world in worlds:
        outcome, checks = run_group(plan, world, timeout_s=arguments.timeout)
        failed |= report_group(outcome, checks)
        cells = by_cell(checks)
        for cell in cells.values():
            found = failed_checks(cell)
            if found:
                print(f"repro: {save_cp_repro(arguments.out / 'repros', plan, found)}")
        if cells:
            # One check cell per group size: a world-2 finding is not hidden by a world-4 pass.
            records = pd.DataFrame([cell_record(cell, world) for cell in cells.values()])
            append(arguments.out, records, "check", meta)
    return EXIT_FINDINGS if failed else EXIT_OK


def main(arguments: argparse.Namespace) -> int:
    if arguments.repro is not None:
        return replay_and_report(arguments.repro, arguments.device, arguments.timeout)
    try:
        return _run(arguments)
    except SutLoadError as error:
        raise UsageError(str(error)) from None
