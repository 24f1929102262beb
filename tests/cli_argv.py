"""Hypothesis strategies for `kvh` command lines, every verb, valid and invalid values mixed (the
CLI property test, tests/test_cli_property.py). Kept cheap and harmless by construction: no
`--jobs` above 1 (children), no `--sut sglang` or release range (a load or an install), no
`sut install` that pip would take, and for the verbs whose valid run costs minutes (bench, cp,
mutants, bisect) one value of the command line is always one argparse refuses."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

# Numbers as a user might type them, right or wrong.
NUMBERS = [
    "0",
    "1",
    "2",
    "7",
    "-1",
    "-0",
    "1e3",
    "0.5",
    "nan",
    "inf",
    "-inf",
    "",
    " 3",
    "x",
    "\u00b2",
    str(2**31),
    str(2**63 - 1),
    str(2**63),
    str(2**70),
    "9" * 40,
    "0x10",
    "1_000",
]
BAD_WHOLE = ["-1", "x", "1e3", "nan", "", "\u00b2", "9" * 40, str(2**70)]
JUNK = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)


def _junk(prefix: str = "") -> st.SearchStrategy[str]:
    # Never a name that imports something real, matches a release or a fork, or is an option.
    return JUNK.map(lambda text: f"{prefix}{text}".replace("=", "_").lstrip("-") or "x")


def _values(*fixed: str, junk: bool = True) -> st.SearchStrategy[str]:
    options = st.sampled_from(list(fixed))
    # Junk one draw in four, so that most command lines get past their first flag.
    return st.one_of(options, options, options, _junk("no_such_")) if junk else options


def _flags(table: dict[str, st.SearchStrategy[str] | None]) -> st.SearchStrategy[list[str]]:
    """A few of `table`'s flags, each with a drawn value (None: a switch)."""

    @st.composite
    def draw(data) -> list[str]:
        names = data(st.lists(st.sampled_from(sorted(table)), max_size=5, unique=True))
        argv: list[str] = []
        for name in names:
            argv.append(name)
            if table[name] is not None:
                argv.append(data(table[name]))
        return argv

    return draw()


def run_flags(folder: Path) -> dict[str, st.SearchStrategy[str] | None]:
    scenario, bad_json = str(folder / "scenario.json"), str(folder / "bad.json")
    return {
        "--sut": _values(
            "builtin",
            "builtin:torch",
            "builtin:nope",
            "sglang==9.9.9",
            "sglang@/nonexistent",
            "kvh_no_such_module",
        ),
        "--pool": _values("mha", "mla", "swa_mha", "mha,mla", "", ",", "nope"),
        "--dtype": _values("bf16", "fp32", "fp8_e4m3", "int4", ""),
        "--era": _values("legacy", "current", "legacy,current", "v5"),
        "--engine": _values("torch", "reference", "triton", "cuda"),
        "--backend": _values("plain", "fa3", "plain,plain_mla", "nope"),
        "--device": _values("cpu", "cuda", "tpu", "cuda:99", "meta"),
        "--seed": st.sampled_from(NUMBERS),
        "--examples": st.sampled_from(NUMBERS),
        "--profile": _values("dev", "ci", "nightly", "bogus"),
        "--special-values": None,
        "--scenario": _values(scenario, bad_json, "/nonexistent.json", junk=False),
        "--shard": _values("1/2", "2/2", "0/2", "3/2", "1/0", "x"),
        "--timeout": st.sampled_from(NUMBERS),
        "--junit": _values(str(folder / "j.xml"), str(folder / "file" / "j.xml"), junk=False),
        "--jobs": st.sampled_from(["1", *BAD_WHOLE]),
    }


def report_flags() -> dict[str, st.SearchStrategy[str] | None]:
    return {
        "--baseline": _values("last:5", "last:1", "last:0", "last:x", "night-0"),
        "--threshold": st.sampled_from(NUMBERS),
        "--alpha": st.sampled_from(NUMBERS),
        "--max-cv": st.sampled_from(NUMBERS),
    }


# The verbs no drawn command line may run for real: one bad whole number always goes with them.
HEAVY = {
    "bench": {
        "--tokens": _values("1", "1,4096", "0", "x", junk=False),
        "--layers": _values("1", "2", "-3", junk=False),
        "--threads": st.sampled_from(NUMBERS),
        "--min-time": st.sampled_from(NUMBERS),
        "--passes": st.sampled_from(NUMBERS),
        "--quick": None,
        "--pool": _values("mha", "nope"),
    },
    "cp": {
        "--world": _values("2", "1,2", "0", "x", junk=False),
        "--timeout": st.sampled_from(NUMBERS),
        "--pools": _values("mha", "nope"),
        "--device": _values("cpu", "cuda", "tpu", junk=False),
    },
    "mutants": {
        "--budget": st.sampled_from(NUMBERS),
        "--only": _values("noop", "nope"),
        "--profile": _values("dev", "bogus"),
    },
    "bisect": {
        "--scenario": _values("decode", "nope"),
        "--pool": _values("mha", "nope"),
        "--backend": _values("plain", "nope"),
    },
}
# The one flag of each heavy verb that takes a whole number, refused at the command line.
HEAVY_NUMBER = {"bench": "--passes", "cp": "--seed", "mutants": "--seed", "bisect": "--seed"}


@st.composite
def argv(data, folder: Path) -> list[str]:
    """One `kvh` command line; `folder` holds the files it may name (results folders of each
    kind, scenario files, a plain file where a folder is wanted)."""
    verb = data(
        st.sampled_from(
            [
                "run",
                "run",
                "run",
                "report",
                "report",
                "matrix",
                "sut",
                "repro",
                "help",
                "junk",
                "bench",
                "cp",
                "mutants",
                "bisect",
            ]
        )
    )
    out = ["--out", data(_values(str(folder / "out"), str(folder / "file"), junk=False))]
    if verb == "help":
        return data(st.sampled_from([["--help"], [], ["-h", "run"]]))
    if verb == "junk":
        return [data(_junk())]
    if verb == "run":
        return ["run", *data(_flags(run_flags(folder))), *out]
    if verb == "report":
        results = data(
            st.sampled_from(["empty", "corrupt", "forged", "valid", "valid", "missing", "file"])
        )
        return ["report", str(folder / results), *data(_flags(report_flags())), *out]
    if verb == "matrix":
        sut = data(st.sampled_from([[], ["--sut", "sglang==9.9.9"], ["--sut", "nope"]]))
        return ["matrix", *sut, "--out", str(folder / data(st.sampled_from(["m.json", "file"])))]
    if verb == "sut":
        return data(
            st.sampled_from(
                [
                    ["sut", "list"],
                    ["sut"],
                    ["sut", "install"],
                    ["sut", "install", "nope"],
                    ["sut", "install", "=9"],
                    ["sut", "install", "sglang=="],
                    ["sut", "check", "sglang==9.9.9"],
                    ["sut", "check", "sglang@/nonexistent"],
                    ["sut", "frobnicate"],
                ]
            )
        )
    if verb == "repro":
        return ["repro", str(folder / data(st.sampled_from(["bad.json", "none.json", "file"])))]
    table = HEAVY[verb]
    flags = data(_flags(table))
    bad = [HEAVY_NUMBER[verb], data(st.sampled_from(BAD_WHOLE))]
    positional = ["sglang==0.5.14", "sglang==0.5.23"] if verb == "bisect" else []
    if data(st.booleans()):
        return [verb, *positional, *bad, *flags, *(out if verb != "bisect" else [])]
    return [verb, *positional, *flags, *bad, *(out if verb != "bisect" else [])]
