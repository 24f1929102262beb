"""Release-source catalogue: source transformations applied to a copy of an SGLang release.

Each record names files of the `sglang/` package and a pure text transform. A refactor keeps
every write byte-identical, so the harness must PASS it with as many backends running as release
code as on the unmodified release; a fault changes what is written, so the harness must report a
finding. A transform that matches nothing raises `TransformMissed`: a release where the edit does
not apply says so instead of running the unmodified release under the mutant's name.

This module is data and text only (mutants/ imports nothing of harness); the runner that copies
a release and judges it is harness/run/release_source.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

Kind = Literal["refactor", "fault"]
Transform = Callable[[str], str]

# The cheap slice every record runs on unless it says otherwise: one token-major, one SWA and one
# latent pool, through the plain model and two backends that run as release code on a CPU.
DEFAULT_POOLS = ("mha", "swa_mha", "mla")
DEFAULT_DTYPES = ("bf16",)
DEFAULT_BACKENDS = ("plain", "fa3", "triton")


class TransformMissed(ValueError):
    """A transform found nothing to change in the file it was given."""


def sub(pattern: str, replacement: str, count: int = 0, flags: int = 0) -> Transform:
    """A regex substitution that raises when it changes nothing (count 0: every match)."""
    compiled = re.compile(pattern, flags)

    def transform(text: str) -> str:
        changed, hits = compiled.subn(replacement, text, count=count)
        if hits == 0:
            raise TransformMissed(f"no match for /{pattern}/")
        return changed

    return transform


def chain(*transforms: Transform) -> Transform:
    """Transforms applied in order; each must change something."""

    def transform(text: str) -> str:
        for step in transforms:
            text = step(text)
        return text

    return transform


@dataclass(frozen=True)
class SourceEdit:
    """One transform over `path` (relative to the sglang package). A path with `*` is a glob:
    the transform is applied to every matching file it changes, and must change at least one
    (a rename at every use); a plain path must exist and change."""

    path: str
    transform: Transform

    @property
    def is_glob(self) -> bool:
        return "*" in self.path


@dataclass(frozen=True)
class ReleaseMutant:
    name: str
    kind: Kind
    description: str
    edits: tuple[SourceEdit, ...]
    pools: tuple[str, ...] = DEFAULT_POOLS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    # The file a fault's finding should name (release_site or the finding text), for the
    # "names the release file" column; empty for a refactor.
    expect_file: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("refactor", "fault"):
            raise ValueError(f"{self.name}: kind must be refactor or fault, not {self.kind!r}")
        if not self.edits:
            raise ValueError(f"{self.name}: no edits")
        if self.kind == "fault" and not self.expect_file:
            raise ValueError(f"{self.name}: a fault names the file its finding should point at")


MEMORY_POOL = "srt/mem_cache/memory_pool.py"
FORWARD_BATCH = "srt/model_executor/forward_batch_info.py"
TRITON = "srt/layers/attention/triton_backend.py"
EVERY_FILE = "**/*.py"

# The field a refactor adds to ForwardBatch, declared last so it takes a default like its
# neighbours (a dataclass field without one may not follow fields with one).
_NEW_FIELD = (
    r"\1\n    # Added by the release-source refactor: a field with a default for_batch reads.\n"
    r"    kv_write_loc_epoch: int = 0\n"
)

CATALOGUE: tuple[ReleaseMutant, ...] = (
    ReleaseMutant(
        name="rename_swa_loc",
        kind="refactor",
        description="KVWriteLoc.swa_loc renamed swa_slot with every reader, keyword and local",
        edits=(SourceEdit(EVERY_FILE, sub(r"\bswa_loc\b", "swa_slot")),),
    ),
    ReleaseMutant(
        name="rename_unwrap_helper",
        kind="refactor",
        description="unwrap_write_loc renamed split_write_loc at its definition and every use",
        edits=(SourceEdit(EVERY_FILE, sub(r"\bunwrap_write_loc\b", "split_write_loc")),),
    ),
    ReleaseMutant(
        name="for_batch_reads_new_field",
        kind="refactor",
        description="ForwardBatch gains kv_write_loc_epoch = 0 and KVWriteLoc.for_batch reads it "
        "(physical only while the epoch is 0, which it always is)",
        edits=(
            SourceEdit(
                FORWARD_BATCH,
                sub(r"(\n    forward_metadata_replan_equivalent: bool = False\n)", _NEW_FIELD, 1),
            ),
            SourceEdit(
                MEMORY_POOL,
                sub(
                    r"physical=forward_batch\.out_cache_loc_is_physical,",
                    "physical=forward_batch.out_cache_loc_is_physical\n"
                    "            and forward_batch.kv_write_loc_epoch == 0,",
                    1,
                ),
            ),
        ),
    ),
    ReleaseMutant(
        name="door_no_unwrap",
        kind="fault",
        description="the first write door of memory_pool.py (MHA set_kv_buffer) indexes with the "
        "KVWriteLoc itself instead of unwrapping it",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                sub(r"loc, _(?:, _)? = unwrap_write_loc\(loc_info\)", "loc = loc_info", 1),
            ),
        ),
        pools=("mha",),
        expect_file="memory_pool.py",
    ),
    ReleaseMutant(
        name="for_batch_drops_swa_loc",
        kind="fault",
        description="KVWriteLoc.for_batch builds its loc without the swa_loc it was given",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                sub(
                    r"(forward_batch\.out_cache_loc,\n\s+)swa_loc,(\n\s+full_loc,)",
                    r"\1None,\2",
                    1,
                ),
            ),
        ),
        pools=("swa_mha",),
        expect_file="memory_pool.py",
    ),
    ReleaseMutant(
        name="mla_skips_k_scale",
        kind="fault",
        description="triton's extend writes MLA K unscaled: `if self.use_mla or layer.k_scale is "
        "None:` takes the plain write (the branch an older release shipped)",
        edits=(
            SourceEdit(
                TRITON,
                sub(
                    r"if layer\.k_scale is None:(\n\s+self\.)",
                    r"if self.use_mla or layer.k_scale is None:\1",
                    1,
                ),
            ),
        ),
        pools=("mla",),
        dtypes=("fp8_e4m3",),
        backends=("plain_mla", "triton"),
        expect_file="triton_backend.py",
    ),
)


def release_mutant_named(name: str) -> ReleaseMutant:
    for mutant in CATALOGUE:
        if mutant.name == name:
            return mutant
    known = ", ".join(m.name for m in CATALOGUE)
    raise ValueError(f"no release-source mutant {name!r} (known: {known})")
