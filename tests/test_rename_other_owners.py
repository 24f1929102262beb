"""The rename campaign's reach beside names other objects hold too (harness/run/rope_rename.py,
harness/run/name_owners.py): a member other classes define is renamed as one protocol
(`row_bytes`); a name a tensor or a file has too (`shape`, `write`) only where it is the
release's; an outside factory of the same spelling (`create`) keeps its name; an attribute a class
outside the write path sets on itself stays that class's (fa3's own `use_mla` beside
HybridLinearKVPool's, in 0.5.23); a release method whose name a tensor holds as data is renamed at
its calls on untyped objects (a sub-pool spec's `layout()`); a file that opens with a byte-order
mark is read as code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.run.rope_rename import rename_in_copy
from mutants.release_renames import WRITE_PATH, private_names
from tests.test_release_renames import _write, package_tree

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
    package_tree(root, POOL, caller=BACKEND)
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
    package_tree(tmp_path, POOL, caller="\ufeff" + textwrap.dedent(BACKEND))
    (private,) = [p for p in private_names(tmp_path / "sglang") if p.name == "use_mla"]
    rename_in_copy(tmp_path, private, "use_mla_kvh_renamed")
    assert _write(tmp_path) == BEFORE


# A write-path module whose private names other objects share: a slot that is also a keyword
# (KvBufferDesc's row_bytes), a method another class outside the write path defines too and a
# caller reaches through either (DensePart's row_bytes), a tensor's `shape`, a file's `write`.
SHARED_POOL = """
import io
from dataclasses import dataclass

import torch


class Desc:
    __slots__ = ("shape", "row_bytes")

    def __init__(self, shape, *, row_bytes):
        self.shape = tuple(shape)
        self.row_bytes = int(row_bytes)

    def span(self, loc):
        return loc.shape[0] * self.row_bytes + len(self.shape)


@dataclass
class Space:
    write: object = None


def translate(space, loc):
    log = io.StringIO()
    log.write(f"{space.write is not None}")
    return space.write(loc) if space.write is not None else loc
"""
SHARED_CALLER = """
import io

import torch

from sglang.srt.mem_cache.memory_pool import Desc, Space, translate


class Part:
    def row_bytes(self):
        return 4


class Spec:
    def row_bytes(self):
        return 8


def run():
    loc = torch.arange(3)
    out = io.StringIO()
    out.write("x")
    sizes = [p.row_bytes() for p in (Part(), Spec())]
    desc = Desc(getattr(loc, "shape"), row_bytes=2)
    moved = translate(Space(write=lambda l: l + 1), loc)
    return sizes, desc.span(loc), moved.tolist(), out.getvalue()
"""


def _shared_package(root: Path) -> Path:
    return package_tree(root, SHARED_POOL, caller=SHARED_CALLER.replace("def run", "def write"))


@pytest.mark.parametrize("name", ["row_bytes", "shape", "write"])
def test_a_name_other_objects_share_is_renamed_where_it_is_the_release_s(
    tmp_path: Path, name: str
) -> None:
    root = _shared_package(tmp_path)
    before = _write(root)
    assert before == "([4, 8], 7, [1, 2, 3], 'x')"
    (private,) = [p for p in private_names(root / "sglang") if p.name == name]
    new = f"{name}_kvh_renamed"
    changed = rename_in_copy(root, private, new).changed
    assert _write(root) == before  # the renamed copy behaves as the release did
    pool = (root / "sglang" / WRITE_PATH[0]).read_text()
    caller = (root / "sglang" / "srt" / "caller.py").read_text()
    if name == "row_bytes":  # the slot, and both classes of the protocol a caller reaches
        assert f'"{new}")' in pool and "def row_bytes(" not in caller
    if name == "shape":  # the Desc's, not a tensor's, nor a getattr of a tensor elsewhere
        assert "loc.shape[0]" in pool and f"self.{new}" in pool
        assert 'getattr(loc, "shape")' in caller
    if name == "write":  # the field, its reads, its keyword; not a file's write
        assert f"space.{new}(loc)" in pool and f"Space({new}=" in caller
        assert 'log.write(f"{space.' in pool and 'out.write("x")' in caller
    assert f"sglang/{WRITE_PATH[0]}" in changed


# A write-path class's factory and an outside class's factory of the same spelling, each called
# on its class: rope tells the calls apart, so the outside one is another method, not a protocol
# (0.5.23's NgramEmbeddingInfo.create beside TorchMemorySaverAdapter.create).
FACTORY_POOL = """
from sglang.srt.adapter import Adapter


class Info:
    @classmethod
    def create(cls):
        return cls()


class Pool:
    def __init__(self):
        self.saver = Adapter.create()
        self.info = Info.create()
"""
FACTORY_ADAPTER = """
class Adapter:
    @staticmethod
    def create():
        return "saver"
"""
FACTORY_CALLER = """
from sglang.srt.adapter import Adapter
from sglang.srt.mem_cache.memory_pool import Pool


def write():
    return Pool().saver, Adapter.create()
"""


def test_an_outside_factory_of_the_same_spelling_keeps_its_name(tmp_path: Path) -> None:
    package_tree(tmp_path, FACTORY_POOL, adapter=FACTORY_ADAPTER, caller=FACTORY_CALLER)
    before = _write(tmp_path)
    assert before == "('saver', 'saver')"
    (private,) = [p for p in private_names(tmp_path / "sglang") if p.name == "create"]
    rename_in_copy(tmp_path, private, "create_kvh_renamed")
    assert _write(tmp_path) == before
    pool = (tmp_path / "sglang" / WRITE_PATH[0]).read_text()
    assert "Adapter.create()" in pool and "Info.create_kvh_renamed()" in pool
    assert "def create():" in (tmp_path / "sglang" / "srt" / "adapter.py").read_text()
