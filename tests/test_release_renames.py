"""The rename campaign (harness/run/release_renames.py): the private names of a write path, each
renamed at every use by rope (string literals that name it included), the functions a rename
touched, the cells a trail selects; and on the installed release, a seeded sample of renames
judged with the release's plan row for row (its seed is printed at the end of the run)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.run.edited_functions import touched_functions
from harness.run.release_renames import judged_slice, sample, sentinel_within
from harness.run.release_source import Slice
from harness.run.rope_rename import rename_in_copy
from mutants.release_renames import WRITE_PATH, private_names
from tests.conftest import run_kvh

# The sample CI judges: a seed whose five names rope renames (the closing note lists those it
# cannot) and the sentinel slice as the universe, so the baseline run stays small.
CI_SEED, CI_SAMPLE = 1, 5
SENTINEL_UNIVERSE = ("--pool", "mha,swa_mha,mla,unified_mha", "--dtype", "bf16",
                     "--backend", "plain,plain_mla")  # fmt: skip

POOL = """
from dataclasses import dataclass

BYTES_PER_GB = 1 << 30


@dataclass
class KVWriteLoc:
    loc: list
    swa_loc: list = None


class Pool:
    def __init__(self):
        self.k_buffer = []
        self._written_rows = 0

    def set_kv_buffer(self, layer, loc, k, v):
        self._written_rows += self._row_count(loc)
        return getattr(self, "_written_rows")

    def _row_count(self, loc):
        return len(loc)
"""
CALLER = """
from sglang.srt.mem_cache.memory_pool import Pool


def write():
    pool = Pool()
    return pool.set_kv_buffer(None, [1, 2, 3], None, None), pool._row_count([1])
"""


def package_tree(root: Path, pool: str, **modules: str) -> Path:
    """A tiny `sglang` package under `root`: `pool` as the write path's memory_pool.py and each
    other module of srt/ by its name (`caller=...` is srt/caller.py), dedented. Returns root."""
    (root / "sglang" / "srt" / "mem_cache").mkdir(parents=True)
    for folder in ("sglang", "sglang/srt", "sglang/srt/mem_cache"):
        (root / folder / "__init__.py").write_text("")
    (root / "sglang" / WRITE_PATH[0]).write_text(textwrap.dedent(pool), encoding="utf-8")
    for name, text in modules.items():
        (root / "sglang" / "srt" / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _package(root: Path) -> Path:
    return package_tree(root, POOL, caller=CALLER)


def _write(root: Path) -> str:
    code = "from sglang.srt.caller import write; print(write())"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    return done.stdout.strip() or done.stderr


def test_private_names_leave_the_public_write_api_out(tmp_path: Path) -> None:
    found = {p.name: p.kinds for p in private_names(_package(tmp_path) / "sglang")}
    assert found == {
        "BYTES_PER_GB": ("constant",),
        "_written_rows": ("attribute",),
        "_row_count": ("method",),
    }  # not loc, swa_loc (KVWriteLoc's fields), k_buffer, set_kv_buffer or __init__


@pytest.mark.parametrize(
    "name, files",
    [
        ("_row_count", {f"sglang/{WRITE_PATH[0]}", "sglang/srt/caller.py"}),
        ("_written_rows", {f"sglang/{WRITE_PATH[0]}"}),  # its getattr string is a use too
    ],
)
def test_a_rename_reaches_every_use_and_keeps_the_behaviour(
    tmp_path: Path, name: str, files: set
) -> None:
    root = _package(tmp_path)
    before = _write(root)
    (private,) = [p for p in private_names(root / "sglang") if p.name == name]
    assert set(rename_in_copy(root, private, f"{name}_kvh_renamed").changed) == files
    text = (root / "sglang" / WRITE_PATH[0]).read_text()
    assert f"{name}_kvh_renamed" in text and f"{name}(" not in text and f'"{name}"' not in text
    assert _write(root) == before == "(3, 1)"


def test_the_functions_a_rename_touched_are_named_as_a_trail_names_them() -> None:
    before = textwrap.dedent("""
        class Pool:
            def write(self):
                return self._rows

            def read(self):
                return 1
    """)
    after = before.replace("_rows", "_rows_kvh_renamed")
    assert touched_functions({"sglang/srt/mem_cache/memory_pool.py": (before, after)}) == {
        "memory_pool.py Pool.write"
    }


def test_the_judged_slice_is_the_sentinel_and_every_cell_a_trail_reaches() -> None:
    sentinel = Slice(("mha",), ("bf16",), ("plain",))
    trails = {
        ("mla", "fp8_e4m3", "triton"): {"memory_pool.py Pool.write"},
        ("swa_mha", "bf16", "fa3"): {"swa_memory_pool.py SWAKVPool.set_kv_buffer"},
    }
    cells = judged_slice({"memory_pool.py Pool.write"}, trails, sentinel)
    assert cells == Slice(("mha", "mla"), ("bf16", "fp8_e4m3"), ("plain", "triton"))


def test_the_sentinel_is_judged_only_where_the_universe_holds_the_release_s_plan() -> None:
    sentinel = Slice(("mha", "mla"), ("bf16",), ("plain", "plain_mla"))
    narrow = Slice(("mla",), ("bf16", "fp8_e4m3"), ("flashinfer_mla",))
    within = sentinel_within(sentinel, narrow)
    assert within == Slice(("mla",), ("bf16",), ())
    trails = {("mla", "fp8_e4m3", "flashinfer_mla"): {"memory_pool.py Pool.write"}}
    reached = judged_slice({"memory_pool.py Pool.write"}, trails, within)
    assert reached == Slice(("mla",), ("bf16", "fp8_e4m3"), ("flashinfer_mla",))
    unreached = judged_slice({"memory_pool.py Other.write"}, trails, within)
    assert unreached.backends == ()  # no cell: the campaign says UNREACHED, not PASS


def test_a_sample_is_the_seed_s_and_all_without_a_count() -> None:
    names = private_names(Path(__file__).parent)  # no write path here: none
    assert names == [] and sample(names, None, 0) == []


@pytest.mark.slow
@pytest.mark.sglang
def test_a_seeded_sample_of_renames_passes_with_the_release_s_plan(
    tmp_path: Path, record_property
) -> None:
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed here")
    record_property(
        "rename_campaign", f"--seed {CI_SEED} --sample {CI_SAMPLE} {' '.join(SENTINEL_UNIVERSE)}"
    )
    done = run_kvh(
        "mutants", "--sut", "sglang", "--renames", "--sample", str(CI_SAMPLE),
        "--seed", str(CI_SEED), *SENTINEL_UNIVERSE, "--out", str(tmp_path), timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"renames passed {CI_SAMPLE}/{CI_SAMPLE}" in done.stdout, done.stdout
    assert f"(--seed {CI_SEED})" in done.stderr
    # The judges were forked warm: an unmodified copy judged so held the cold run's plan.
    assert "kvh: warm judges:" in done.stderr and "row for row" in done.stderr, done.stderr


TOKENS_SOURCE = """
from dataclasses import dataclass


@dataclass
class Batch:
    seq_lens_cpu: list = None

    @classmethod
    def build(cls, lens):
        return cls(seq_lens_cpu=lens)


def plan(seq_lens_cpu=None):
    return seq_lens_cpu


def use(batch):
    seq_lens_cpu = batch.seq_lens_cpu
    return Batch(seq_lens_cpu=seq_lens_cpu), plan(seq_lens_cpu=batch.seq_lens_cpu)
"""


def test_a_rename_rope_cannot_make_renames_the_field_and_leaves_a_keyword_of_the_same_spelling():
    from harness.run.name_owners import definition_offsets
    from harness.run.token_rename import field_classes, rename_tokens

    name, new = "seq_lens_cpu", "seq_lens_cpu_kvh_renamed"
    renamed = rename_tokens(
        TOKENS_SOURCE, name, new, definition_offsets(TOKENS_SOURCE, name), ("field",),
        frozenset(field_classes(TOKENS_SOURCE, name)),
    )  # fmt: skip
    namespace: dict = {}
    exec(compile(renamed, "renamed.py", "exec"), namespace)  # the renamed module still runs
    built, planned = namespace["use"](namespace["Batch"].build([3]))
    assert built.seq_lens_cpu_kvh_renamed == [3] and planned == [3]
    # The field, its reads, its class's keywords are renamed; plan()'s parameter and keyword and
    # the local of the same spelling are not.
    assert renamed.count(new) == 5
    assert "def plan(seq_lens_cpu=None)" in renamed and "plan(seq_lens_cpu=batch." in renamed


def test_a_module_function_rope_cannot_rename_is_renamed_at_its_bare_uses_too():
    from harness.run.name_owners import definition_offsets
    from harness.run.token_rename import rename_tokens

    text = "def helper(x):\n    return x\n\n\nVALUE = helper(1)\nobj.helper = helper\n"
    renamed = rename_tokens(text, "helper", "h2", definition_offsets(text, "helper"), ("function",))
    assert renamed == "def h2(x):\n    return x\n\n\nVALUE = h2(1)\nobj.h2 = h2\n"


def test_a_warm_judge_imports_nothing_of_the_release_and_no_stand_in(tmp_path: Path) -> None:
    import types

    from harness.run.forked_judges import warm_modules

    release = tmp_path / "release"
    (release / "sglang").mkdir(parents=True)
    (release / "transformers").mkdir()

    def module(name: str, origin: str | None, standin: bool = False) -> types.ModuleType:
        made = types.ModuleType(name)
        if origin is not None:
            made.__file__ = origin
        if standin:
            made.__kvwrite_standin__ = True
        return made

    loaded = {
        "torch": module("torch", "/venv/torch/__init__.py"),
        "sglang": module("sglang", str(release / "sglang" / "__init__.py")),
        "sglang.srt": module("sglang.srt", str(release / "sglang" / "srt" / "__init__.py")),
        "transformers": module("transformers", str(release / "transformers" / "__init__.py")),
        "sgl_kernel": module("sgl_kernel", None, standin=True),
        "vendored": module("vendored", str(release / "sglang" / "vendored.py")),
        "builtin_thing": module("builtin_thing", None),
        # The learning run's own script, under both names multiprocessing gives it.
        "__main__": module("__main__", "/repo/harness/run/forked_judges.py"),
        "__mp_main__": module("__mp_main__", "/repo/harness/run/forked_judges.py"),
    }
    # The release's own sibling dependencies are imported from the same folder a judge's copy
    # links to; its sglang package, anything under it, and a stand-in never are.
    assert [name for name, _ in warm_modules(loaded, release)] == ["torch", "transformers"]


def test_a_string_that_names_the_parameter_is_kept_and_a_getattr_s_is_renamed():
    from harness.run.token_rename import is_parameter, rename_strings

    text = (
        "class Pool:\n"
        "    def __init__(self, allocation_label=None):\n"
        "        self.allocation_label = allocation_label\n"
        "\n"
        "\n"
        "def build():\n"
        "    kwargs = {'allocation_label': 'SWA'}\n"
        "    mutated = ['allocation_label']\n"
        "    return Pool(**kwargs), getattr(Pool(), 'allocation_label')\n"
    )
    name, new = "allocation_label", "allocation_label_kvh_renamed"
    assert is_parameter([text], name)
    renamed = rename_strings(text, name, new, parameter=True)
    assert "{'allocation_label': 'SWA'}" in renamed  # the constructor's keyword, as rope keeps it
    assert "['allocation_label']" in renamed  # a custom op's mutated argument, say
    assert "getattr(Pool(), 'allocation_label_kvh_renamed')" in renamed  # the attribute's use
    # Where no function takes such a parameter, a dict key naming it is a field list: renamed.
    assert "{'allocation_label_kvh_renamed': 'SWA'}" in rename_strings(text, name, new)


def test_a_judge_past_its_deadline_is_killed_and_says_so(tmp_path: Path) -> None:
    import os
    import signal
    import time

    from harness.run.forked_judges import Judges

    judges = Judges(tmp_path)
    log = tmp_path / "judge.log"
    log.write_text("started\n")
    pid = os.fork()
    if pid == 0:  # a judge that hangs
        time.sleep(60)
        os._exit(0)
    judges.running[pid] = (str(log), time.monotonic() - 1)  # its deadline has passed
    ended, rc, output = judges.wait_any()
    assert (ended, rc) == (pid, -signal.SIGKILL)
    assert output.startswith("started") and "ran past" in output and not judges.running


def test_a_cold_judge_runs_kvh_in_a_child_and_gives_its_exit_code(tmp_path: Path) -> None:
    from harness.run.forked_judges import Judges, run_once

    rc, output, _ = run_once(Judges(tmp_path, cold=True), ["sut", "--help"], tmp_path / "log")
    assert rc == 0 and "usage: kvh sut" in output


def test_a_token_rename_reaches_an_f_string_and_leaves_an_import_path():
    from harness.run.token_rename import rename_tokens

    text = (
        "from sglang.srt.layers.layout import Part\n"
        "import sglang.srt.layout\n"
        "\n"
        "\n"
        "def show(pool):\n"
        '    return f"{pool.layout:>4} {{pool.layout}}", pool.layout\n'
    )
    renamed = rename_tokens(text, "layout", "layout2", [], ("attribute",))
    assert renamed.splitlines()[:2] == text.splitlines()[:2]  # modules, not the attribute
    assert 'f"{pool.layout2:>4} {{pool.layout}}", pool.layout2' in renamed


# A file rope's parser fails on (a comment holding an f-string's text before an f-string, as in
# 0.5.23's flash_attn/cute/blackwell_helpers.py): rope renames everywhere else, the tokens there.
UNREADABLE = """
from sglang.srt.mem_cache.memory_pool import Pool


def asm(hi):
    return str(
        [
        ],
        # f"mov.b32 tmem_acc, {hex(acc)};"
        f"mov.b32 desc, {hex(hi)};"
        + "".join(
            (
            )
        )
    ), Pool()._row_count([1, 2])
"""


def test_a_file_rope_cannot_read_is_renamed_from_its_tokens(tmp_path: Path) -> None:
    root = _package(tmp_path)
    (root / "sglang" / "srt" / "kernel.py").write_text(textwrap.dedent(UNREADABLE))
    (private,) = [p for p in private_names(root / "sglang") if p.name == "_row_count"]
    renamed = rename_in_copy(root, private, "_row_count_kvh_renamed")
    assert renamed.by.startswith("rope (tokens in sglang/srt/kernel.py"), renamed.by
    kernel = (root / "sglang" / "srt" / "kernel.py").read_text()
    assert "Pool()._row_count_kvh_renamed([1, 2])" in kernel
    assert _write(root) == "(3, 1)"
