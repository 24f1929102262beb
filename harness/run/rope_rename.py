"""One private name renamed at every use in a copy of a release's `sglang/` package: with rope
where rope can, from the tokens where it refuses (harness/run/token_rename.py), and the string
literals that name it as an attribute. The campaign that judges each renamed copy is
harness/run/release_renames.py."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from harness.run.name_owners import (
    OUTSIDER,
    OWNED,
    TENSOR,
    definition_offsets,
    other_owners,
    outsider_attribute,
    owned_elsewhere,
    tensor_data_only,
)
from harness.run.token_rename import (
    ALL,
    NONE,
    SELF,
    field_classes,
    is_parameter,
    rename_strings,
    rename_tokens,
)
from mutants.release_renames import PrivateName


def _word(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")


def package_texts(package: Path) -> dict[Path, str]:
    """Every .py file of `package` by its path relative to it, read once for a campaign."""
    return {
        path.relative_to(package): path.read_text(errors="replace")
        for path in sorted(package.rglob("*.py"))
    }


def files_naming(package: Path, name: str, texts: Optional[dict[Path, str]] = None) -> list[Path]:
    """The .py files of `package` whose text holds `name` as a whole word, relative to it;
    `texts`: the package's package_texts, where a campaign read them already."""
    word = _word(name)
    texts = package_texts(package) if texts is None else texts
    return [path for path, text in texts.items() if name in text and word.search(text)]


# Kinds whose every definition is module-level: only its module, and a file naming that module
# (an import of it, or of the module), can reach it.
MODULE_LEVEL = frozenset({"function", "constant"})


def files_reaching(
    package: Path, private: PrivateName, texts: Optional[dict[Path, str]] = None
) -> list[Path]:
    """The files a rename of `private` can change: those naming it (files_naming), and for a
    module-level name only its defining modules and the files that name one of them (`logger`
    is named by 1,316 files of 0.5.23, and rope read every one: 177 s)."""
    naming = files_naming(package, private.name, texts)
    if not set(private.kinds) <= MODULE_LEVEL:
        return naming
    stems = {Path(f).stem for f in private.files}
    texts = package_texts(package) if texts is None else texts
    return [
        f for f in naming
        if str(f) in private.files or any(stem in texts[f] for stem in stems)
    ]  # fmt: skip


def _own_copy(path: Path) -> None:
    """Replace a hard link with a file of its own, so an edit never reaches the release."""
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)


def _attribute_uses(
    defining: set[str], outsider: str, calls_ours: bool = False
) -> Callable[[Any], bool]:
    """rope's `unsure` callback: an occurrence rope cannot prove or rule out is renamed when it
    is an attribute access (`pool.name` on an untyped pool), never a bare name. A bare name rope
    could not resolve is a parameter or a local of the same spelling (`total_bytes` in
    `UnifiedKVPool.__init__(self, *, total_bytes)`): a signature that callers outside the release
    name, which renaming a private attribute must not change. Where an `outsider` has the
    attribute too, only in the files that define it (`defining`: `fout.write` in a benchmark is
    a file's, `space.write` in kv_loc_plan.py the release's), and where a tensor has it only
    `self.name` there (`loc.shape` beside KvBufferDesc's `self.shape` is a tensor's), or a call
    `x.name(...)` where the tensor's is data and the release's a method (`calls_ours`:
    `spec.layout()` is a sub-pool spec's, a tensor's `layout` is not callable). Module texts are
    read once."""
    texts: dict[str, str] = {}

    def unsure(occurrence: Any) -> bool:
        path = occurrence.resource.path
        if outsider and path not in defining:
            return False
        text = texts.setdefault(path, occurrence.resource.read())
        start, end = occurrence.get_word_range()
        before = text[:start].rstrip()
        called = calls_ours and text[end:].lstrip().startswith("(")
        return before.endswith(".") and (outsider != TENSOR or called or _on_self(before))

    return unsure


def _attribute_scope(outsider: str, in_write_path: bool) -> str:
    """The attribute accesses a token rename reaches in one file (as _attribute_uses decides
    rope's unsure ones): all of them, unless an outsider has the attribute too; then, in the
    write path, all where the outsider is rare there and `self.name` where it is a tensor."""
    if not outsider:
        return ALL
    if not in_write_path:
        return NONE
    return SELF if outsider == TENSOR else ALL


def _on_self(before: str) -> bool:
    """Whether the text before an attribute's name ends with `self.`."""
    return re.search(r"(?<![\w.])self\s*\.$", before) is not None


# How many files rope may fail to read in one rename before it gives up (each is left to the
# tokens): 0.5.23's CuTe DSL kernels hold comments and f-strings that rope's parser cannot match
# to their tokens (flash_attn/cute/blackwell_helpers.py: a ValueError, an AttributeError or a
# MismatchedTokenError, by function).
UNPARSED_LIMIT = 5


def _changes(
    rename: Any, new_name: str, resources: list, unsure: Callable[[Any], bool], unparsed: list
) -> Any:
    """rope's changes for `rename` over `resources`. A file that rope fails on while it reads it
    for occurrences (its own parser's error, raised while that file is its active job; not a
    refusal of the rename) is taken out of `resources`, added to `unparsed`, and the changes are
    collected again without it."""
    from rope.base.exceptions import RefactoringError
    from rope.base.taskhandle import TaskHandle

    while True:
        handle = TaskHandle("rename")
        try:
            return rename.get_changes(
                new_name, resources=resources, in_hierarchy=True, unsure=unsure, docs=False,
                task_handle=handle,
            )  # fmt: skip
        except RefactoringError:
            raise
        except Exception:  # noqa: BLE001 - rope's parser, failing on one file
            jobset = handle.current_jobset()
            failing = jobset.job_name if jobset is not None else None
            if not failing or failing in unparsed or len(unparsed) >= UNPARSED_LIMIT:
                raise
            unparsed.append(failing)
            resources[:] = [r for r in resources if r.path != failing]


def _rope_rename(
    root: Path, name: str, new_name: str, relative: list[Path], modules: list[str],
    unsure: Callable[[Any], bool], unparsed: list[str],
) -> str:  # fmt: skip
    """Rename each definition of `name` in `modules` (in its class hierarchy) across the files
    `relative`, with rope; rope's refusal or failure, or "" when it renamed them all. A file
    rope cannot read is left out and named in `unparsed`, for the tokens to rename."""
    from rope.base.project import Project
    from rope.refactor.rename import Rename

    with warnings.catch_warnings():  # rope's own DeprecationWarning about its internals
        warnings.simplefilter("ignore", DeprecationWarning)
        # No analysis of each module as rope saves it (automatic_soa, 1.5 s a rename on 0.5.23)
        # and no history: the project lives for one rename.
        project = Project(str(root), ropefolder=None, automatic_soa=False, save_history=False)
    allowed = {str(f) for f in relative}
    try:
        resources = [project.get_resource(str(f)) for f in relative]
        for module in modules:
            resource = project.get_resource(module)
            left = -1
            while True:
                # Found again after each rename: an earlier one moved the text, or reached it.
                offsets = definition_offsets(resource.read(), name)
                if not offsets:
                    break
                if len(offsets) == left:
                    return f"RefactoringError: rope left a definition at {offsets[0]}"
                left = len(offsets)
                try:
                    changes = _changes(
                        Rename(project, resource, offsets[0]), new_name, resources, unsure,
                        unparsed,
                    )  # fmt: skip
                    beyond = [r.path for r in changes.get_changed_resources()]
                    beyond = [path for path in beyond if path not in allowed]
                    if beyond:  # a file that does not name it: maybe the release's own, linked
                        raise ValueError(f"rope would change {beyond[0]}, which does not name it")
                    project.do(changes)
                except Exception as error:  # noqa: BLE001 - rope's refusal or its own failure
                    return f"{type(error).__name__}: {error}"
        return ""
    finally:
        project.close()


@dataclass
class Renamed:
    changed: dict[str, tuple[str, str]]  # each changed file's (text before, text after)
    by: str  # "rope", or "tokens (rope: its refusal)" where rope could not (rename_tokens)


def rename_in_copy(
    root: Path, private: PrivateName, new_name: str, naming: Optional[list[Path]] = None
) -> Renamed:
    """Rename `private` at every use in the package `root/sglang` (root holds the copy), with
    rope; where rope refuses or fails, from the tokens (rename_tokens). `naming`: the files of
    the package it can reach (files_reaching), where the caller knows them. Files by path
    relative to root."""
    package = root / "sglang"
    naming = files_reaching(package, private) if naming is None else naming
    relative = [Path("sglang") / f for f in naming]
    before = {str(f): (root / f).read_text() for f in relative}
    for f in relative:
        _own_copy(root / f)
    outsider = outsider_attribute(private.name)
    write_path = {str(Path("sglang") / f) for f in private.files}
    others = {str(f) for f in other_owners(private, relative, before, outsider)}
    if not outsider and not others and owned_elsewhere(private, relative, before):
        outsider = OWNED
    unparsed: list[str] = []
    refused = _rope_rename(
        root, private.name, new_name, relative, sorted(write_path),
        _attribute_uses(
            write_path, outsider,
            outsider == TENSOR and "method" in private.kinds and tensor_data_only(private.name),
        ),
        unparsed,
    )  # fmt: skip
    defining = write_path | others
    classes = frozenset(
        c for f in defining if f in before for c in field_classes(before[f], private.name)
    )
    for f in relative if refused or classes or others or unparsed else []:
        # From the release's texts where rope refused. After rope, the other owners' members
        # (rope renamed the write path's hierarchy), the files rope could not read, and the
        # keywords of a call to a class whose field it is (rope renames a dataclass's field, not
        # its keywords).
        text = before[str(f)] if refused else (root / f).read_text()
        offsets = definition_offsets(text, private.name) if str(f) in defining else []
        whole = bool(refused) or str(f) in others or str(f) in unparsed
        renamed = rename_tokens(
            text, private.name, new_name, offsets, private.kinds, classes,
            attributes=_attribute_scope(outsider, str(f) in write_path),
            keywords_only=not whole,
        )  # fmt: skip
        (root / f).write_text(renamed)
    changed = {}
    # Where outsiders have the attribute too, only the defining files' getattr-family and slot
    # strings: `getattr(w13_scale, "shape", None)` in a kernel is a tensor's.
    parameter = outsider in (TENSOR, OUTSIDER) or is_parameter(list(before.values()), private.name)
    for f in relative:
        text = (root / f).read_text()
        if not outsider or str(f) in defining:
            text = rename_strings(text, private.name, new_name, parameter)
            (root / f).write_text(text)
        if text != before[str(f)]:
            changed[str(f)] = (before[str(f)], text)
    if refused:
        return Renamed(changed, f"tokens (rope: {refused[:200]})")
    return Renamed(changed, f"rope (tokens in {', '.join(unparsed)}: rope could not read them)"
                   if unparsed else "rope")  # fmt: skip
