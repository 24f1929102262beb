"""The batches at a context-parallel strategy's edges, which the cp backend runs in extend
(backends/focus.py CP_BATCHES); scenarios.defaults makes them into scenarios.

SGLang 0.5.22-0.5.23's ZigzagCPStrategy.can_apply takes an extend of 2N tokens or more, each
request too (2N = 4 on kvh run's two ranks). Taken through CP, the pool scales gathered copies
of k and v; not taken, the caller's own in place, which the caller_tensors oracle tells apart on
a scaled write. build_metadata then checks its counts with `==`, where `is` agrees only up to
256, and pads the last request of a batch that carries its seq_lens alone.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from scenarios.allocator import allocate
from scenarios.model import Forward, Geometry, RequestSpan, Scale

# Requests of 4 tokens, 2N on kvh run's two CP ranks: enough of them that build_metadata's counts
# (4 blocks a request, 2 zigzag entries a request, and the tokens) all pass 256.
WIDE_REQUESTS, WIDE_EXTEND = 129, 4


def cp_writes(g: Geometry) -> bool:
    """The kinds a context-parallel write reaches (backends/context_parallel.py: MHA rows)."""
    return g.kind.base and not g.kind.latent


def cp_batches(
    rng: random.Random, g: Geometry, scaled_input: str
) -> list[tuple[str, Geometry, list[Forward], dict[str, Any]]]:
    """Each batch as (name, geometry, forwards, the scenario's other fields), its slots drawn
    from `rng`. `cp-floor-scaled`: one request of exactly 4 tokens (CP), requests of 2 and 3
    (no CP: each is under 4), and 3 tokens handed without their requests (no CP: the batch is
    under 4). `cp-wide-batch`: 129 requests of 4 tokens after a cached prefix of 2, 516 tokens,
    on a geometry wide enough. `cp-padded-device-lens`: requests of 4 and 4 padded past twice
    their tokens, then by one row, handed with their seq_lens alone: build_metadata's padding
    grows the last request by 9, then by 1."""
    slots = allocate(rng, g.size, g.page_size, 12)
    floor = [
        Forward(slots[:4], requests=[RequestSpan(4, 4)]),
        Forward(slots[4:9], requests=[RequestSpan(2, 2), RequestSpan(3, 7)]),
        Forward(slots[9:12]),
    ]
    wide_g = replace(g, size=2048, size_swa=1024 if g.size_swa else 0)
    wide = allocate(rng, wide_g.size, wide_g.page_size, WIDE_REQUESTS * WIDE_EXTEND)
    requests = [RequestSpan(WIDE_EXTEND, WIDE_EXTEND + 2)] * WIDE_REQUESTS
    scale = dict(
        input_dtype=scaled_input, k_scale=Scale("tensor", 0.3), v_scale=Scale("param", 1.7)
    )
    # Two requests of 4 padded at slot 0 by 9 rows (more than their 8 tokens), then by one:
    # handed as a ROCm server's overlap batch (seq_lens only), whose last request the strategy
    # grows by the pad.
    padded = [
        Forward(
            allocate(rng, g.size, g.page_size, 8) + [0] * pad,
            requests=[RequestSpan(4, 4), RequestSpan(4, 4)],
            extend_lens_on_host=False,
        )
        for pad in (9, 1)
    ]
    return [
        ("cp-floor-scaled", g, floor, scale),
        ("cp-wide-batch", wide_g, [Forward(wide, requests=requests)], {}),
        ("cp-padded-device-lens", g, padded, {}),
    ]
