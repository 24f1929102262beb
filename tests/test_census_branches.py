"""The census reads the branch that chooses a write call, and every file with a write call is
claimed by a backend (harness/sut/probe/census_branches.py, `kvh sut check`)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from harness.cli.sut import check
from harness.sut.probe.census import census, census_file
from harness.sut.probe.census_call_sites import BACKEND_MODELS
from harness.sut.probe.census_compare import branch_mismatches, compare
from tests.conftest import SGLANG_INSTALL_HINT, installed_sglang_root

ROOT = installed_sglang_root()
needs_release = pytest.mark.skipif(ROOT is None, reason=SGLANG_INSTALL_HINT)
TRITON = "sglang/srt/layers/attention/triton_backend.py"
NEW_BACKENDS = ("torch_flex", "wave", "hpc_ops", "cutedsl_mla")


def test_each_call_records_its_enclosing_if_chain_with_else_arms_negated(tmp_path):
    source = tmp_path / "backend.py"
    source.write_text(
        textwrap.dedent("""
        class Backend:
            def forward_extend(self, layer, loc, k, v, save_kv_cache):
                if save_kv_cache:
                    if layer.k_scale is None:
                        self.pool.set_kv_buffer(layer, loc, k, v)
                    elif self.use_mla:
                        self.pool.set_kv_buffer(layer, loc, k / layer.k_scale, v)
                    else:
                        self.pool.set_kv_buffer(layer, loc, k, v, layer.k_scale, layer.v_scale)
    """)
    )
    branches = [call.branch for call in census_file(source, "backend.py")]
    assert branches == [
        ("save_kv_cache", "layer.k_scale is None"),
        ("save_kv_cache", "layer.k_scale is not None", "self.use_mla"),
        ("save_kv_cache", "layer.k_scale is not None", "not self.use_mla"),
    ]


def _triton_copy(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The installed release's triton file copied into tmp_path with `old` replaced by `new`;
    returns the tree and the line of the edit."""
    (tmp_path / TRITON).parent.mkdir(parents=True)
    text = (ROOT / TRITON).read_text()
    at = text.index(old)
    (tmp_path / TRITON).write_text(text[:at] + new + text[at + len(old) :])
    return tmp_path, text[:at].count("\n") + 1


@pytest.mark.sglang
@needs_release
def test_a_changed_branch_around_an_unchanged_write_call_is_reported_with_file_and_line(
    tmp_path,
):
    # Issue 39's triton MLA path: the unscaled write chosen for MLA too, so K skips k_scale.
    tree, edited = _triton_copy(
        tmp_path, "if layer.k_scale is None:", "if self.use_mla or layer.k_scale is None:"
    )
    model = BACKEND_MODELS["triton"]
    assert branch_mismatches(census(ROOT), model, "current") == []
    assert compare(census(tree), model, "current") == []  # the call shapes are unchanged
    mismatches = branch_mismatches(census(tree), model, "current")
    changed = [m for m in mismatches if m.line]
    # The unscaled call, and the two elif/else arms whose chains now negate the new test.
    assert len(changed) == 3 and {m.file for m in changed} == {TRITON}
    assert edited <= changed[0].line <= edited + 6
    assert "if self.use_mla or layer.k_scale is None" in changed[0].expression
    assert "if layer.k_scale is None" in changed[0].expected
    assert "not (self.use_mla or layer.k_scale is None) / if self.use_mla" in changed[1].expression
    # The call expressions are unchanged: only the branch tells them apart.
    assert all(m.expression.startswith("branch ") for m in mismatches if m.line)
    # And the branches it replaced are reported as gone.
    gone = [m.expected for m in mismatches if not m.line]
    assert len(gone) == 3
    assert gone[0].endswith("if save_kv_cache / if layer.k_scale is None")


@pytest.mark.sglang
@needs_release
def test_kvh_sut_check_names_the_changed_branch_and_exits_1(tmp_path, capsys):
    tree, _ = _triton_copy(
        tmp_path, "if layer.k_scale is None:", "if self.use_mla or layer.k_scale is None:"
    )
    line = next(
        m.line
        for m in branch_mismatches(census(tree), BACKEND_MODELS["triton"], "current")
        if m.line
    )
    assert check(str(tree), "current") == 1
    out = capsys.readouterr().out
    assert "triton: 6 mismatch(es)" in out
    assert f"{TRITON}:{line}: branch forward_extend:" in out


@pytest.mark.sglang
@needs_release
def test_a_write_file_no_backend_claims_makes_the_check_exit_1(tmp_path, capsys):
    tree, _ = _triton_copy(tmp_path, "class TritonAttnBackend", "class TritonAttnBackend")
    shutil.copy(tmp_path / TRITON, tmp_path / TRITON.replace("triton_", "upstream_new_"))
    assert check(str(tree), "current") == 1
    out = capsys.readouterr().out
    assert "triton: model matches" in out
    assert "write calls in files no backend model claims: upstream_new_backend.py" in out


@pytest.mark.sglang
@needs_release
def test_the_installed_release_claims_every_write_file_and_matches_every_branch(capsys):
    assert check(str(ROOT)) == 0
    out = capsys.readouterr().out
    assert "no backend model claims" not in out
    assert all(f"{name}: model matches" in out for name in NEW_BACKENDS)


@pytest.mark.parametrize("name", list(BACKEND_MODELS))
def test_every_backend_with_a_release_file_declares_the_branches_of_its_calls(name):
    branches = BACKEND_MODELS[name].sites.branches
    # A model with no modelled call (tokenspeed_mla: its one write is unmodelled) has no branch.
    assert bool(branches) == bool(BACKEND_MODELS[name].sites.eras), name
    assert all(b.function and all(b.tests) for group in branches.values() for b in group)
