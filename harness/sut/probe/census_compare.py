"""A release's census (harness/sut/probe/census.py) against the harness's call-site models
(harness/sut/probe/census_call_sites.py): the calls whose shapes or branches the model for an era
does not expect, the expected shapes no call has, what each model leaves out on purpose, and the
files with write calls that no model claims."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.sut.probe.census import Census, WriteCall
from harness.sut.probe.census_branches import branch_findings
from harness.sut.probe.census_call_sites import BACKEND_MODELS, BackendModel


@dataclass(frozen=True)
class Mismatch:
    backend: str
    file: str
    line: int
    expression: str
    expected: str

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.expression} (model expects {self.expected})"


def files_present(model: BackendModel, census_: Census) -> tuple[str, ...]:
    return files_under(model, census_.root)


def files_under(model: BackendModel, root: str) -> tuple[str, ...]:
    """The model's files that the release under `root` (the folder holding `sglang`) has."""
    return tuple(name for name in model.files if (Path(root) / name).is_file())


def _in_scope(call: WriteCall, model: BackendModel) -> bool:
    method = call.function.rsplit(".", 1)[-1]
    return method not in model.unmodelled_functions


def _modelled_calls(
    census_: Census, model: BackendModel
) -> tuple[tuple[str, ...], list[WriteCall]]:
    """The model's files the release has, and their calls outside its unmodelled functions."""
    files = files_present(model, census_)
    return files, [call for call in census_.for_files(files) if _in_scope(call, model)]


def compare(
    census_: Census, model: BackendModel, era: str, missing: frozenset[str] = frozenset()
) -> list[Mismatch]:
    """Each modelled call whose shapes include none the model expects for `era` (on a release
    without the KVWriteLoc constructors `missing`) unless all of them are declared unmodelled,
    and each expected shape that no call has."""
    wanted = model.expected(era, missing)
    expected, unmodelled = set(wanted), model.unmodelled(era, missing)
    files, calls = _modelled_calls(census_, model)
    found = {shape for call in calls for shape in call.variants}
    expected_text = "; ".join(shape.describe() for shape in wanted) or "no write call"
    mismatches = [
        Mismatch(
            model.name,
            call.file,
            call.line,
            " | ".join(shape.describe() for shape in call.variants),
            expected_text,
        )
        for call in calls
        if not set(call.variants) & expected and not set(call.variants) <= set(unmodelled)
    ]
    mismatches += [
        Mismatch(model.name, files[0] if files else "-", 0, "no such call", shape.describe())
        for shape in wanted
        if shape not in found
    ]
    return mismatches


def branch_mismatches(census_: Census, model: BackendModel, era: str) -> list[Mismatch]:
    """Each modelled call under a branch the model does not declare for `era`, and each declared
    branch no call has. Only `kvh sut check` reports them: a run's call-site fit (call_sites.py)
    stays on shapes, so a release between the eras, whose branches were never declared, is not
    skipped for them."""
    files, calls = _modelled_calls(census_, model)
    declared = model.sites.branches.get(era)
    return [Mismatch(model.name, *found) for found in branch_findings(calls, declared, files)]


def notes(
    census_: Census, model: BackendModel, era: str, missing: frozenset[str] = frozenset()
) -> list[str]:
    """What the model leaves out on purpose: calls in unmodelled functions or of declared shapes,
    and the branches of matching calls that the model does not take."""
    expected, unmodelled = set(model.expected(era, missing)), model.unmodelled(era, missing)
    lines = []
    for call in census_.for_files(files_present(model, census_)):
        where = f"{call.file}:{call.line}"
        method = call.function.rsplit(".", 1)[-1]
        if method in model.unmodelled_functions:
            lines.append(f"{where}: not modelled ({model.unmodelled_functions[method]})")
        elif set(call.variants) <= set(unmodelled) and not set(call.variants) & expected:
            lines.append(f"{where}: not modelled ({unmodelled[call.variants[0]]})")
        elif set(call.variants) & expected:
            lines += [
                f"{where}: branch not modelled: {shape.describe()}"
                for shape in call.variants
                if shape not in expected
            ]
    return lines


def unmodelled_files(
    census_: Census, models: dict[str, BackendModel] = BACKEND_MODELS
) -> list[str]:
    """Files with write calls that no backend model claims."""
    claimed = {name for model in models.values() for name in model.files}
    return [name for name in census_.calls if name not in claimed]
