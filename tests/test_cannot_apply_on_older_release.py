"""A pool kind whose layout switch an older release's pool ignores is not that release's design:
its cells cannot apply, counted apart from the skips (reports/outcome.py SkipKind.NOT_OFFERED).
A layout that only builds on another platform stays a skip with its reason. Driven through the
real 0.5.14 release, as `kvh run --sut` loads it (a backend file a release lacks:
tests/test_sut_plan.py)."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import _foreign_choice, close_suts
from reports.outcome import SkipKind
from tests.conftest import skip_unless_installed


@pytest.fixture(scope="module")
def older_release():
    skip_unless_installed("sglang==0.5.14")
    choice = _foreign_choice("sglang==0.5.14", RunOptions())
    assert choice.loaded is not None, choice.load_error
    yield choice
    close_suts([choice])


def _only(backend: str, pool: str, choice) -> Skip:
    (item,) = candidates_for(BACKENDS[backend], "extend", [choice], RunOptions(), pool, "bf16")
    assert isinstance(item, Skip), item
    return item


def test_a_layout_switch_the_pool_ignores_is_another_design_not_a_skip(older_release):
    # 0.5.14's MHATokenToKVPool reads no SGLANG_USE_HND_KVCACHE: built with it, its key buffer is
    # token-major rows, so the head-major kind is not its design.
    absent = dict(older_release.loaded.absent)
    assert "does not take SGLANG_USE_HND_KVCACHE" in absent["MHATokenToKVPoolHND"]
    skip = _only("trtllm_mha", "mha_hnd", older_release)
    assert skip.kind == SkipKind.NOT_OFFERED


def test_a_layout_that_only_builds_on_another_platform_stays_a_skip_with_its_reason(older_release):
    # The 5-D layout is ROCm AITER's: whether a release has it cannot be told by running it here.
    unoffered = dict(older_release.loaded.unoffered)
    assert "builds no 5-D layout on this machine" in unoffered["MHATokenToKVPoolAiter5D"]
    skip = _only("aiter", "mha_aiter5d", older_release)
    assert skip.kind == SkipKind.SKIPPED
    assert "5-D layout" in skip.reason
