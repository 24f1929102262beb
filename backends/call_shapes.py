"""The call shapes a backend's modelled call site makes, per era: what the source census
(harness/sut/probe/census.py) compares a release's own write calls with.

Data only. Each backend module declares its `CallSiteModel` on its entry (`census=`): the release
files its call sites are in, and per era the shapes of the calls the module's write function
makes. The helpers below spell the era conventions of backends/era_calls.py as shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pools.builtin.eras import ERAS


@dataclass(frozen=True)
class Shape:
    door: str  # set_kv_buffer | set_mla_kv_buffer
    loc: str  # bare | KVWriteLoc | for_layer | for_batch
    target: str  # cache_loc (encoder loc on cross-attention) | out_cache_loc
    swa: str | None = None  # swa_out_cache_loc, or None
    swa_keyword: bool = False  # swa passed as the pool's swa_loc= keyword (kwarg era)
    scales: tuple[str, ...] = ()  # the scale expressions passed, () for none

    def describe(self) -> str:
        loc = {
            "bare": self.target,
            "KVWriteLoc": f"KVWriteLoc({self.target}, {self.swa})",
            "for_layer": f"KVWriteLoc.for_layer(swa_loc={self.swa})",
            "for_batch": f"KVWriteLoc.for_batch(swa_loc={self.swa})",
        }.get(self.loc, self.target)
        extra = [*self.scales] + ([f"swa_loc={self.swa}"] if self.swa_keyword else [])
        return f"{self.door}({', '.join([loc, *extra])})"


@dataclass(frozen=True)
class Branch:
    """The `if` tests that choose a write call, outermost first, as `ast.unparse` writes them (an
    `else`/`elif` arm holds `not (<the test it skips>)`), in the method (no class) that makes it."""

    function: str
    tests: tuple[str, ...] = ()

    def describe(self) -> str:
        chain = " / ".join(f"if {test}" for test in self.tests) or "unconditional"
        return f"{self.function}: {chain}"


@dataclass(frozen=True)
class CallSiteModel:
    # Release files (relative to the folder holding the `sglang` package) with the call sites;
    # a release with none of them is reported so.
    files: tuple[str, ...]
    eras: dict[str, tuple[Shape, ...]]
    # Calls in these functions are outside what the backend module models, with the reason.
    unmodelled_functions: dict[str, str] = field(default_factory=dict)
    # Whole calls of this shape are known and deliberately not modelled, per era, with the reason.
    unmodelled_shapes: dict[str, tuple[tuple[Shape, str], ...]] = field(default_factory=dict)
    # Per era, the branches the release files choose their modelled write calls under: the
    # census reports a call under any other branch, and a declared branch no call has.
    branches: dict[str, tuple[Branch, ...]] = field(default_factory=dict)
    # The backend whose release file holds this one's write calls, where it has none of its own
    # (a subclass that overrides only kernels): its calls are checked there.
    calls_of: str = ""

    def expected(self, era: str, missing: frozenset[str] = frozenset()) -> tuple[Shape, ...]:
        """The shapes of `era`'s calls, on a SUT without the KVWriteLoc constructors `missing`."""
        return tuple(direct_shape(shape, missing) for shape in self.eras.get(era, ()))

    def unmodelled(self, era: str, missing: frozenset[str] = frozenset()) -> dict[Shape, str]:
        return {
            direct_shape(shape, missing): why for shape, why in self.unmodelled_shapes.get(era, ())
        }


def direct_shape(shape: Shape, missing: frozenset[str]) -> Shape:
    """What a call made with a constructor the release lacks is there instead (era_calls): the
    release's site builds KVWriteLoc(loc, swa) itself where it pairs a SWA loc, and passes the
    bare loc where it does not (0.5.15 to 0.5.21, before for_layer and for_batch)."""
    if shape.loc not in missing:
        return shape
    return replace(shape, loc="bare" if shape.swa is None else "KVWriteLoc")


SWA = "swa_out_cache_loc"
LAYER_SCALES = ("layer.k_scale", "layer.v_scale")
KV, MLA = "set_kv_buffer", "set_mla_kv_buffer"
ERA_NAMES: tuple[str, ...] = tuple(ERAS)
ATTENTION = "sglang/srt/layers/attention/"
HARDWARE = "sglang/srt/hardware_backend/"


def swa_site(
    target: str,
    scales: tuple[str, ...] = (),
    *,
    current: str,
    current_scales: tuple[str, ...] | None = None,
    swa: str = SWA,
) -> dict[str, tuple[Shape, ...]]:
    """A site that pairs the SWA loc (era_calls.write_loc): legacy the bare loc; kwarg one call
    with swa_loc= on SWA pools and one without; bundled KVWriteLoc(loc, swa); current as
    `current` names (for_layer, for_batch, or KVWriteLoc for a bare one)."""
    now = current_scales if current_scales is not None else scales
    return {
        "legacy": (Shape(KV, "bare", target, scales=scales),),
        "kwarg": (
            Shape(KV, "bare", target, swa, True, scales),
            Shape(KV, "bare", target, scales=scales),
        ),
        "bundled": (Shape(KV, "KVWriteLoc", target, swa, scales=scales),),
        "current": (Shape(KV, current, target, swa, scales=now),),
    }


def bare_site(door: str, target: str, *, current: str = "bare") -> dict[str, tuple[Shape, ...]]:
    """A site that passes a bare loc (era_calls.bare_loc): wrapped without swa_loc only in
    `current`, and only where `current` names a constructor."""
    sites = {era: (Shape(door, "bare", target),) for era in ERA_NAMES}
    if current != "bare":
        sites["current"] = (Shape(door, current, target),)
    return sites


def branch(function: str, *tests: str) -> Branch:
    return Branch(function, tests)


def eras_branches(
    *declared: tuple[tuple[str, ...], tuple[Branch, ...]],
) -> dict[str, tuple[Branch, ...]]:
    """Branches per era from (eras, branches) pairs, so a chain several eras share is written
    once."""
    return {
        era: tuple(dict.fromkeys(b for eras, group in declared if era in eras for b in group))
        for era in ERA_NAMES
        if any(era in eras for eras, _ in declared)
    }


def merge(*sites: dict[str, tuple[Shape, ...]]) -> dict[str, tuple[Shape, ...]]:
    return {
        era: tuple(dict.fromkeys(shape for site in sites for shape in site.get(era, ())))
        for era in ERA_NAMES
    }
