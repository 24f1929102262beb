"""What `kvh bench` measures: its options, the scenario of each size, and the cells they expand to.

A bench scenario is one forward of `tokens` tokens over `layers` layers on paged slots (page
size 16, random pages, as SGLang's allocator hands them out), at serving-sized geometry: MHA 8
heads of 128, MLA kv_lora_rank 512 + rope 64. SWA pools map every token into the window and put
the even layers on the SWA sub-pool, so a one-layer SWA bench times the translated write; a
SWA pool has a full layer too (SGLang's hybrid models do, and the scenario rules ask for one), so
one of one layer holds two and writes the first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from harness.bench.timers import Budget
from harness.plan.sut_choice import SutChoice
from harness.sut.probe.detect import conventions
from pools.builtin.eras import ERAS
from pools.dtypes import dtype_spec
from pools.kinds.registry import KINDS
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, SWA_MHA
from scenarios.allocator import allocate, swa_mapping
from scenarios.model import BASE_POOL_KINDS, MLA_POOL_KINDS, Forward, Geometry, Scenario
from scenarios.strategies.geometry import kind_page_size

PAGE_SIZE = 16
TOKEN_COUNTS = (1, 16, 256, 4096, 32768)
# Per pass. Five passes of 0.25 s: slow spells of this shared VM last seconds (a 1-token write
# ran at 46 us instead of 25 us for a whole 3 s family), so a cell's samples must come from
# several moments of the run; 400 samples a pass keep 2000 per 1-token cell.
QUICK_PASSES = 5
QUICK_BUDGET = Budget(warmup=3, warmup_s=0.1, min_samples=3, max_samples=400, min_time_s=0.25)
FULL_PASSES = 3
FULL_BUDGET = Budget(warmup=3, warmup_s=0.1, min_samples=4, max_samples=700, min_time_s=0.35)
# One torch thread: on a shared 2-vCPU VM a two-thread copy of 4096 tokens' bytes ran 270 us in
# one run and 590-710 us in the next three (the host's L3 is shared), while one thread kept
# every 4096-token median within 9% over four runs (docs/bench.md).
QUICK = dict(
    pools=list(names(MHA, SWA_MHA)),
    dtypes=["bf16"],
    eras=["legacy", "current"],
    engines=["torch"],
    tokens=[1, 4096],
    layers=[1],
    threads=1,
    passes=QUICK_PASSES,
)


@dataclass
class BenchOptions:
    suts: list[str] = field(default_factory=lambda: ["builtin"])
    backends: list[str] = field(default_factory=lambda: ["plain"])
    pools: list[str] = field(default_factory=lambda: list(BASE_POOL_KINDS))
    dtypes: list[str] = field(
        default_factory=lambda: ["bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2"]
    )
    eras: list[str] = field(default_factory=lambda: ["legacy", "kwarg", "bundled", "current"])
    engines: list[str] = field(default_factory=lambda: ["torch", "reference"])
    tokens: list[int] = field(default_factory=lambda: list(TOKEN_COUNTS))
    layers: list[int] = field(default_factory=lambda: [1])
    device: str = "cpu"
    seed: int = 0
    eras_named: bool = False  # --era given: a foreign SUT is timed through those it offers
    cuda_graph: bool = False  # time the replay of a CUDA graph holding the write (GPU only)
    threads: Optional[int] = None  # torch intra-op threads; None keeps torch's own
    passes: int = FULL_PASSES  # times the whole plan is timed; the budget is per pass
    budget: Budget = FULL_BUDGET
    out: Path = Path("kvh-out")
    timeout_s: Optional[float] = 300.0  # per cell (build, time, snapshot); a hang is an error


@dataclass(frozen=True)
class BenchCell:
    sut: SutChoice
    engine: str  # builtin store engine, or "-" for a foreign SUT
    era: str  # the call site's era
    backend: str
    mode: str

    @property
    def label(self) -> str:
        return f"{self.sut.spec}/{self.era}/{self.engine}/{self.backend}:{self.mode}"


def bench_geometry(pool: str, dtype: str, tokens: int, layers: int) -> Geometry:
    page_size = kind_page_size(pool, PAGE_SIZE)  # a DSA pool's pages hold 64 tokens, and so on
    pages = -(-tokens // page_size)
    size = max(2 * pages, 16) * page_size  # twice the pages written, so the pages scatter
    swa_pool = KINDS[pool].swa
    held = max(layers, 2) if swa_pool else layers  # a full layer beside the SWA one
    swa = [layer for layer in range(held) if layer % 2 == 0] if swa_pool else []
    common = dict(
        pool=pool,
        dtype=dtype,
        size=size,
        page_size=page_size,
        layer_num=held,
        swa_layer_ids=swa,
        size_swa=size if swa else 0,
    )
    if pool in MLA_POOL_KINDS:
        return Geometry(kv_lora_rank=512, qk_rope_head_dim=64, **common)
    if KINDS[pool].page_major:  # page_size == head_num, as the HND scenarios
        return Geometry(head_num=page_size, head_dim=64, **common)
    return Geometry(head_num=8, head_dim=128, **common)


def bench_scenario(pool: str, dtype: str, tokens: int, layers: int, seed: int) -> Scenario:
    rng = random.Random(f"bench:{seed}:{pool}:{dtype}:{tokens}:{layers}")
    g = bench_geometry(pool, dtype, tokens, layers)
    loc = allocate(rng, g.size, g.page_size, tokens)
    mapping = swa_mapping(rng, g.size, g.page_size, g.size_swa, loc, tokens) if g.kind.swa else None
    # Inputs in the pool dtype (bf16 for fp8 pools): no cast, so no in-place division either.
    return Scenario(
        geometry=g,
        forwards=[Forward(loc, layers=None if g.layer_num == layers else list(range(layers)))],
        seed=seed,
        mapping=mapping,
        name=f"bench-{pool}-{dtype}-{tokens}t-{layers}l",
    )


def written_layers(scenario: Scenario) -> int:
    """The layers a bench scenario writes (a one-layer SWA pool holds a full layer it does not)."""
    return len(scenario.layers_of(scenario.forwards[0]))


def bytes_moved(scenario: Scenario, scale_bytes: int = 0) -> int:
    """Bytes a correct write reads (the caller's k/v or nope/rope) and writes (buffer rows),
    over all layers; locs are not counted. fp8 pools read bf16 and write one byte a value."""
    g = scenario.geometry
    tokens = scenario.forwards[0].tokens
    layers = written_layers(scenario)
    if g.kind.fp4:  # bf16-or-wider input read; half a byte a value plus a scale byte per 16 written
        values = (
            g.kv_lora_rank + g.qk_rope_head_dim if g.kind.latent else 2 * g.head_num * g.head_dim
        )
        read = dtype_spec(g.dtype).dtype.itemsize
        return layers * (tokens * (values * read + values // 2 + values // 16) + scale_bytes)
    read_size = 2 if dtype_spec(g.dtype).is_fp8 else dtype_spec(g.dtype).dtype.itemsize
    write_size = dtype_spec(g.dtype).store_dtype.itemsize
    values = (
        g.kv_lora_rank + g.qk_rope_head_dim
        if g.kind.latent
        else g.head_num * (g.head_dim + (g.v_head_dim or g.head_dim))
    )
    return layers * (tokens * values * (read_size + write_size) + scale_bytes)


def cells_for(
    backend_name: str,
    modes: tuple[str, ...],
    backend_eras: tuple[str, ...],
    suts: list[SutChoice],
    options: BenchOptions,
) -> Iterator[BenchCell]:
    """Builtin SUTs: every chosen era and engine. A foreign SUT: only the call conventions it
    offers (`foreign_eras`), never one it lacks (SGLang 0.5.23's SWA pool asserts the swa_loc
    that a legacy call does not pass: timing that is timing an error)."""
    for mode in modes:
        for sut in suts:
            if sut.load_error:
                continue  # the verb has said why; nothing of it can be timed
            if sut.loaded is not None:
                eras = [era for era in backend_eras if era in foreign_eras(sut, options)]
                engines: tuple[str, ...] = ("-",)
            else:
                eras = [era for era in backend_eras if era in options.eras]
                engines = sut.engines
            for engine in engines:
                for era in eras:
                    yield BenchCell(sut, engine, era, backend_name, mode)


def foreign_eras(sut: SutChoice, options: BenchOptions) -> tuple[str, ...]:
    """A foreign SUT's conventions to time: its probed era; with --era, those named that its
    capabilities offer (harness/sut/probe/detect.conventions)."""
    loaded = sut.loaded
    if not options.eras_named:
        return sut.eras
    offered = conventions(loaded.capabilities, loaded.era)
    return tuple(era for era in options.eras if era in offered)


def baseline_cell(cell: BenchCell, measured: Callable[[BenchCell], bool]) -> Optional[BenchCell]:
    """The cell an API overhead ratio divides by: the oldest era's call site on the same SUT,
    engine and pools that was measured (legacy wherever the pools accept it)."""
    for era in list(ERAS)[: list(ERAS).index(cell.era)]:
        candidate = BenchCell(cell.sut, cell.engine, era, cell.backend, cell.mode)
        if measured(candidate):
            return candidate
    return None
