"""A survivor's record: why a generated mutant of a release survives, as data that the score
(reports/mutation_score.py) and its report both read (records per release: mutants/survivors_*.py).

- EQUIVALENT: no input can tell the mutant from the release; the reason says why.
- OUT_OF_REACH: the mutated code runs only where this machine cannot (a GPU-only branch or
  kernel); the reason names the branch.
- OUTSIDE_THE_WRITE: the mutated line is the attention math of a forward, which reads the cache
  and writes none of it: after the write door, where kvh's release driver stops the forward
  (backends/real_code.py), or before it but feeding only the attention output. The issue's
  scope is a forward from its entry to the door, so these are not scored.
- GAP: kvh should have noticed. A gap stays listed, with what closed it (the scenario, oracle or
  backend driver), so that a later campaign shows the kill; an open gap counts against the score.

A record names its mutant by the campaign's id (file, cosmic-ray operator, occurrence) and by the
mutated line as the diff shows it, so a record written for one release cannot excuse another
release's mutant that happens to share an occurrence number.
"""

from __future__ import annotations

from dataclasses import dataclass

EQUIVALENT, OUT_OF_REACH, GAP = "equivalent", "out of reach on a CPU", "gap"
OUTSIDE_THE_WRITE = "outside the write path"
CLASSES = (EQUIVALENT, OUT_OF_REACH, OUTSIDE_THE_WRITE, GAP)


@dataclass(frozen=True)
class Survivor:
    release: str  # "sglang==0.5.23"
    id: str  # the campaign's mutant id: "srt/mem_cache/memory_pool.py:core/NumberReplacer:12"
    mutated: str  # the diff's added line, stripped ("+    if x > 1:" without the "+"); "" if none
    kind: str  # one of CLASSES
    reason: str
    closed_by: str = ""  # for a gap: the scenario, oracle or driver that now kills it


@dataclass(frozen=True)
class Stretch:
    """One reason for every UNREACHED mutant (a statement no check of the unmodified release ran,
    harness/run/mutant_reach.py) whose line lies in `first`..`last` of `function`: written by
    reading that stretch of the release, for code kvh's checks do not run as a whole (the
    attention math after a forward's write, a branch no scenario takes). A mutant that a check
    did run is never excused by a stretch."""

    release: str
    function: str  # as a trail names it: "triton_backend.py TritonAttnBackend.forward_extend"
    first: int
    last: int
    kind: str  # one of CLASSES
    reason: str
    closed_by: str = ""  # for a gap: the scenario, oracle or driver that now runs the stretch

    def holds(self, release: str, function: str, line: int) -> bool:
        return (release, function) == (self.release, self.function) and (
            self.first <= line <= self.last
        )


def after_write(release: str, function: str, door_end: int, last: int) -> Stretch:
    """A forward's lines after its write door (which ends at `door_end`) to its `last`: the
    attention math, outside the write path."""
    return Stretch(
        release, function, door_end + 1, last, OUTSIDE_THE_WRITE,
        f"after the forward's write, which ends at line {door_end}: kvh's release driver stops "
        "the forward once the door returns (backends/real_code.py); what follows reads the cache "
        "for the attention output and writes none of it",
    )  # fmt: skip


def alike(
    release: str, kind: str, reason: str, mutants: tuple[tuple[str, str], ...], closed_by: str = ""
) -> tuple[Survivor, ...]:
    """Records of one reason for several mutants, each as (id, mutated line)."""
    return tuple(Survivor(release, id, mutated, kind, reason, closed_by) for id, mutated in mutants)


def each_replacement(
    prefix: str,
    family: str,
    symbol: str,
    replaced: tuple[tuple[str, str], ...],
    occurrences: tuple[tuple[int, str], ...],
) -> tuple[tuple[str, str], ...]:
    """(id, mutated line) of every operator of `replaced` put for `symbol` in each (occurrence,
    original line): the mutants cosmic-ray's `family` ("ReplaceBinaryOperator_Add") makes there,
    for alike()."""
    return tuple(
        (f"{prefix}{family}_{name}:{occurrence}", line.replace(f" {symbol} ", f" {new} ", 1))
        for name, new in replaced
        for occurrence, line in occurrences
    )


# Every operator cosmic-ray puts in place of `+` (ReplaceBinaryOperator_Add_*), as Python writes it.
ADD_REPLACED = (
    ("Sub", "-"), ("Mul", "*"), ("Div", "/"), ("FloorDiv", "//"), ("Mod", "%"), ("Pow", "**"),
    ("LShift", "<<"), ("RShift", ">>"), ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
)  # fmt: skip
# Those it puts in place of `*` whose result stays an int for two ints.
MUL_INT_REPLACED = (
    ("Add", "+"), ("Sub", "-"), ("FloorDiv", "//"), ("Mod", "%"), ("Pow", "**"),
    ("LShift", "<<"), ("RShift", ">>"), ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
)  # fmt: skip
# Every one it puts in place of `*` (ReplaceBinaryOperator_Mul_*).
MUL_REPLACED = MUL_INT_REPLACED + (("Div", "/"),)
# Those it puts in place of `==` (ReplaceComparisonOperator_Eq_*) and of `!=`; `is` and `is not`
# are numbered apart where the other side is a literal (cosmic-ray makes none there).
EQ_ORDERED = (("NotEq", "!="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="))
NOT_EQ_ORDERED = (("Eq", "=="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="))
LTE_ORDERED = (("Eq", "=="), ("NotEq", "!="), ("Lt", "<"), ("Gt", ">"), ("GtE", ">="))
IDENTITY = (("Is", "is"), ("IsNot", "is not"))

# The reasons several releases' doors share. The out-of-bounds probe maybe_detect_oob
# (utils/async_probe.py) returns before it reads its bounds unless SGLANG_ENABLE_ASYNC_ASSERT is
# set, which kvh leaves as the release ships it (unset): no scenario reaches them.
ASYNC_ASSERT_BOUND = (
    "the mutated expression is the upper bound handed to maybe_detect_oob, which returns before "
    "reading it unless SGLANG_ENABLE_ASYNC_ASSERT is set (off by default; kvh judges the release "
    "as it ships): no write the release makes depends on it"
)
ASYNC_ASSERT_LOWER = (
    "the mutated number is the lower bound handed to maybe_detect_oob, which returns before "
    "reading either bound unless SGLANG_ENABLE_ASYNC_ASSERT is set (off by default; kvh judges the "
    "release as it ships): no write the release makes depends on it"
)
ATTENTION_TYPE_IDENTITY = (
    "`==` replaced by `is` between AttentionType members: an Enum keeps one object per member, "
    "so the two agree on every pair"
)
DTYPE_IDENTITY = (
    "`!=` replaced by `is not` between two torch.dtype values: torch keeps one object per dtype, "
    "so the two agree on every pair"
)
