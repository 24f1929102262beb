"""The rename campaign's reach beside names other objects hold too (harness/run/rope_rename.py): an
attribute a class outside the write path sets on itself stays that class's (fa3's own
`use_mla` beside HybridLinearKVPool's, in 0.5.23), and a release method whose name a tensor holds
as data is renamed at its calls on untyped objects (a sub-pool spec's `layout()`); a file that opens
with a byte-order mark is read as code."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harness.run.rope_rename import rename_in_copy
from mutants.release_renames import WRITE_PATH, private_names
from tests.test_release_renames import _write

POOL = """
import torch


class Spec:
    def layout(self):
        return "dense"


class Pool:
    def __init__(self, use_mla=False):
        self.use_mla = use_mla

    def views(self, spec):
        return spec.layout(), torch.empty(0).layout == torch.strided, self.use_mla
"""
BACKEND = """
from sglang.srt.mem_cache.memory_pool import Pool, Spec


class Backend:
    def __init__(self, pool):
        self.pool = pool
        self.use_mla = True


def _mla(backend):
    return backend.use_mla


def write():
    backend = Backend(Pool())
    return backend.pool.views(Spec()), _mla(backend)
"""
BEFORE = "(('dense', True, False), True)"


def _renamed(root: Path, name: str) -> tuple[str, str, str]:
    (root / "sglang" / "srt" / "mem_cache").mkdir(parents=True)
    for folder in ("sglang", "sglang/srt", "sglang/srt/mem_cache"):
        (root / folder / "__init__.py").write_text("")
    (root / "sglang" / WRITE_PATH[0]).write_text(textwrap.dedent(POOL))
    (root / "sglang" / "srt" / "caller.py").write_text(textwrap.dedent(BACKEND))
    assert _write(root) == BEFORE
    (private,) = [p for p in private_names(root / "sglang") if p.name == name]
    rename_in_copy(root, private, f"{name}_kvh_renamed")
    pool = (root / "sglang" / WRITE_PATH[0]).read_text()
    return pool, (root / "sglang" / "srt" / "caller.py").read_text(), _write(root)


def test_an_attribute_a_class_outside_the_write_path_sets_on_itself_stays_its_own(
    tmp_path: Path,
) -> None:
    pool, backend, after = _renamed(tmp_path, "use_mla")
    assert "self.use_mla_kvh_renamed = use_mla" in pool and "self.use_mla_kvh_renamed\n" in pool
    assert "self.use_mla = True" in backend and "return backend.use_mla\n" in backend
    assert after == BEFORE


def test_a_method_a_tensor_holds_as_data_is_renamed_at_its_calls_on_untyped_objects(
    tmp_path: Path,
) -> None:
    pool, _, after = _renamed(tmp_path, "layout")
    assert "def layout_kvh_renamed(self)" in pool and "spec.layout_kvh_renamed()" in pool
    assert "torch.empty(0).layout == torch.strided" in pool  # the tensor's stays
    assert after == BEFORE


def test_a_file_opening_with_a_byte_order_mark_is_read_as_code(tmp_path: Path) -> None:
    """0.5.14's models/qwen2_classification.py opens with a UTF-8 BOM, which `ast.parse` of the
    text refuses: the renames of input_ids, input_embeds and hidden_states gave no result."""
    (tmp_path / "sglang" / "srt" / "mem_cache").mkdir(parents=True)
    for folder in ("sglang", "sglang/srt", "sglang/srt/mem_cache"):
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "sglang" / WRITE_PATH[0]).write_text(textwrap.dedent(POOL))
    caller = tmp_path / "sglang" / "srt" / "caller.py"
    caller.write_text("\ufeff" + textwrap.dedent(BACKEND), encoding="utf-8")
    (private,) = [p for p in private_names(tmp_path / "sglang") if p.name == "use_mla"]
    rename_in_copy(tmp_path, private, "use_mla_kvh_renamed")
    assert _write(tmp_path) == BEFORE
