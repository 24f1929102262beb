"""What bounds the torch store's fraction of a same-bytes copy at 4,096 tokens (docs/bench.md).

Times, in one process and taking turns as `kvh bench` does, the builtin torch store's write of
one mha bf16 layer (the `plain` call site, current era) against the copy `kvh bench` holds it to,
and the store's own steps alone: the loc's duplicate check, the two scattered row copies
(index_copy_ of 16-byte words into random pages), and the same rows copied to contiguous slots.
Every step is timed taking turns with the others, one run each a round (each starts with what the
others left in the caches), and the store and the copy also back to back, as a bench turn runs
them. Run: .venv/bin/python scripts/store_vs_copy.py [--threads 1,2] [--tokens 4096]
"""

from __future__ import annotations

import argparse
import time

import torch

from harness.bench.measure import TimedWrite, copy_write
from harness.bench.plan import bench_scenario, bytes_moved
from pools.builtin.engines.torch_engine import _resolve, _word_pair
from pools.builtin.sut import builtin_module
from pools.kinds.token_major import MHA


def _median_us(steps: dict, rounds: int) -> dict[str, float]:
    samples: dict[str, list[int]] = {name: [] for name in steps}
    for _ in range(rounds):  # every step once a round, so a slow spell lands on all of them
        for name, step in steps.items():
            started = time.perf_counter_ns()
            step()
            samples[name].append(time.perf_counter_ns() - started)
    return {name: sorted(ns)[len(ns) // 2] / 1e3 for name, ns in samples.items()}


def measure(tokens: int, threads: int, rounds: int) -> dict[str, float]:
    torch.set_num_threads(threads)
    scenario = bench_scenario(MHA.name, "bf16", tokens, 1, seed=0)
    write = TimedWrite(
        builtin_module("current", "torch"), scenario, "cpu", "plain", "current", "extend"
    )
    request = write.requests[0]
    k_buffer = write.pool.k_buffer[0]
    loc = request.forward_batch.out_cache_loc
    slots = _resolve(loc, k_buffer.shape[0])
    words, rows = _word_pair(k_buffer, request.k)
    contiguous = torch.arange(tokens)
    _, copy = copy_write(bytes_moved(scenario), "cpu")
    steps = {
        "store (plain, torch engine)": write.run,
        "copy of the same bytes": copy,
        "duplicate check (_resolve)": lambda: _resolve(loc, k_buffer.shape[0]),
        "k and v rows into random pages (index_copy_)": lambda: [
            words.index_copy_(0, slots.loc, rows) for _ in range(2)
        ],
        "k and v rows into contiguous slots (index_copy_)": lambda: [
            words.index_copy_(0, contiguous, rows) for _ in range(2)
        ],
        "k and v rows, contiguous copy_": lambda: [words[:tokens].copy_(rows) for _ in range(2)],
    }
    for step in steps.values():
        step()  # warm-up: first touches of the pages
    taking_turns = _median_us(steps, rounds)
    # As a `kvh bench` turn runs a write: the same step again and again, the store restored
    # between its iterations. The copy's 2 x 16.8 MB then stays in a 32 MiB L3.
    back_to_back = {
        "store, back to back (a bench turn, restore between)": (write.restore, write.run),
        "copy, back to back (a bench turn)": (lambda: None, copy),
    }
    for name, (setup, step) in back_to_back.items():
        samples = []
        for _ in range(rounds):
            setup()
            started = time.perf_counter_ns()
            step()
            samples.append(time.perf_counter_ns() - started)
        taking_turns[name] = sorted(samples)[len(samples) // 2] / 1e3
    return taking_turns


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=200)
    arguments = parser.parse_args()
    results = {
        int(t): measure(arguments.tokens, int(t), arguments.rounds)
        for t in arguments.threads.split(",")
    }
    names = list(next(iter(results.values())))
    header = " | ".join(f"{t} thread{'s' if t > 1 else ''}: us (/copy)" for t in results)
    print(f"| {arguments.tokens} tokens, mha bf16, one layer | {header} |")
    print("|---|" + "---|" * len(results))
    for name in names:
        cells = " | ".join(
            f"{r[name]:.0f} ({r['copy of the same bytes'] / r[name]:.2f})" for r in results.values()
        )
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
