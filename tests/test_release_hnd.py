"""The mha_hnd kind runs on the release's own head-major layout: SGLang's MHATokenToKVPool built
with SGLANG_USE_HND_KVCACHE set, as a server would be configured (release_constructors.hnd_mha),
so a fault in its door's page-and-offset scatter is a finding, not a cell skipped because the
release has no class of that name."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch

from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.deterministic import run
from harness.sut.load.optional_pools import offered_classes
from harness.sut.load.release_constructors import HND_SWITCH, NotTheDesign, hnd_mha
from harness.sut.probe.write_doors import write_doors
from reports.outcome import Outcome, SkipKind
from tests.conftest import SGLANG_INSTALL_HINT, installed_sglang_root


def test_a_release_whose_pool_ignores_the_switch_is_not_offered_the_kind():
    class MHATokenToKVPool:  # an older release: its pool reads no layout switch
        start_layer = 0

        def __init__(self, size: int):
            self.size = size

        def get_key_buffer(self, layer_id: int) -> torch.Tensor:
            return torch.zeros(self.size, 2, 16)  # token-major rows, whatever the switch says

    with pytest.raises(NotTheDesign, match=HND_SWITCH):  # absent: the kind cannot apply there
        hnd_mha(SimpleNamespace(MHATokenToKVPool=MHATokenToKVPool))(size=4)


def test_the_installed_release_offers_its_hnd_pool_and_every_check_is_judged(monkeypatch):
    root = installed_sglang_root()
    if root is None:
        pytest.skip(SGLANG_INSTALL_HINT)
    from harness.sut.load.sglang_loader import load_sglang

    monkeypatch.delenv(HND_SWITCH, raising=False)
    pool = load_sglang().MHATokenToKVPoolHND(
        size=8, page_size=4, dtype=torch.bfloat16, head_num=2, head_dim=16, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    assert pool.use_hnd is True and tuple(pool.k_buffer[0].shape) == (3, 2, 4, 16)
    assert HND_SWITCH not in os.environ  # set only while the pool builds
    assert "MHATokenToKVPoolHND" in offered_classes(root)
    doors = {(d.cls, d.method): d for d in write_doors(root, offered_classes(root))}
    assert "mha_hnd" in doors["MHATokenToKVPool", "set_kv_buffer"].driven_by

    options = RunOptions(
        suts=["sglang"], pools=["mha_hnd"], dtypes=["bf16"], backends=["plain"], era_table=False
    )
    results: list = []
    run(options, resolve_suts(options), results.append)
    rows = [
        r
        for r in results
        if r.candidate is not None
        and r.candidate.sut == "sglang"
        and not (r.skip and r.skip.kind is SkipKind.BY_DESIGN)
    ]
    assert rows and all(r.outcome is Outcome.PASS for r in rows), [
        (r.outcome, r.skip) for r in rows if r.outcome is not Outcome.PASS
    ]
