"""A release whose write path is a composition no named era has is judged with no code change:
pools with a 3-value unwrap and the cut of #29460 (as `current`), but a KVWriteLoc without the
for_layer/for_batch constructors, so its call sites build `KVWriteLoc(loc, swa_loc)` themselves
(as SGLang 0.5.15 to 0.5.21 did). The call convention follows from its capabilities, and its
backend call site from its own source (the census); nothing names its version."""

from __future__ import annotations

import textwrap

import pytest

from harness.sut.load.environments import missing_shared_modules, not_ready_reason
from harness.sut.probe.detect import era_of, missing_constructors
from harness.sut.probe.source_capabilities import probe_source
from tests.conftest import check_records, run_kvh

COMPOSED_MEMORY_POOL = """
from dataclasses import dataclass
from typing import Optional

import torch

from pools.builtin.sut import builtin_module

_base = builtin_module("current", "torch")


@dataclass
class KVWriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None
    full_loc: Optional[torch.Tensor] = None

    def __post_init__(self):
        tokens = self.loc.shape[0]
        if self.swa_loc is not None and self.swa_loc.shape[0] != tokens:
            self.swa_loc = self.swa_loc[:tokens]
        if self.full_loc is not None and self.full_loc.shape[0] != tokens:
            self.full_loc = self.full_loc[:tokens]


def unwrap_write_loc(loc_info):
    if isinstance(loc_info, KVWriteLoc):
        return loc_info.loc, loc_info.swa_loc, loc_info.full_loc
    return loc_info, None, None


def _bundled(loc_info):
    loc, swa_loc, full_loc = unwrap_write_loc(loc_info)
    return _base.KVWriteLoc(loc, swa_loc, full_loc)


class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, k_scale=None, v_scale=None,
                      layer_id_override=None):
        super().set_kv_buffer(layer, _bundled(loc_info), cache_k, cache_v, k_scale, v_scale,
                              layer_id_override)


class MLATokenToKVPool(_base.MLATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, layer_id_override=None):
        super().set_kv_buffer(layer, _bundled(loc_info), cache_k, cache_v, layer_id_override)

    def set_mla_kv_buffer(self, layer, loc_info, cache_k_nope, cache_k_rope,
                          layer_id_override=None):
        super().set_mla_kv_buffer(layer, _bundled(loc_info), cache_k_nope, cache_k_rope,
                                  layer_id_override)
"""

COMPOSED_SWA_POOL = """
from pools.builtin.sut import builtin_module
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MLATokenToKVPool, _bundled

_base = builtin_module("current", "torch")


class SWAKVPool(_base.SWAKVPool):
    default_sub_pool_class = MHATokenToKVPool

    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, k_scale=1.0, v_scale=1.0):
        super().set_kv_buffer(layer, _bundled(loc_info), cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(self, layer, loc_info, cache_k_nope, cache_k_rope):
        super().set_mla_kv_buffer(layer, _bundled(loc_info), cache_k_nope, cache_k_rope)
"""

# fa3's write calls as 0.5.15 has them (flashattention_backend.py:1033 and :1063): the MHA site
# builds KVWriteLoc(cache_loc, swa_out_cache_loc) itself, the MLA site passes the bare loc.
COMPOSED_FA3_SITE = """
from sglang.srt.mem_cache.memory_pool import KVWriteLoc


class FlashAttentionBackend:
    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, k_rope=None):
        if k is not None and save_kv_cache:
            cache_loc = (
                forward_batch.out_cache_loc
                if not layer.is_cross_attention
                else forward_batch.encoder_out_cache_loc
            )
            if self.use_mla:
                forward_batch.token_to_kv_pool.set_mla_kv_buffer(layer, cache_loc, k, k_rope)
            else:
                forward_batch.token_to_kv_pool.set_kv_buffer(
                    layer,
                    KVWriteLoc(cache_loc, self.forward_metadata.swa_out_cache_loc),
                    k,
                    v,
                    layer.k_scale,
                    layer.v_scale,
                )

    def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True, k_rope=None):
        return self.forward_extend(q, k, v, layer, forward_batch, save_kv_cache, k_rope)
"""


@pytest.fixture
def composed_release(tmp_path):
    package = tmp_path / "release" / "sglang"
    files = {
        "__init__.py": '__version__ = "0.0.0+composed"\n',
        "srt/__init__.py": "",
        "srt/mem_cache/__init__.py": "",
        "srt/mem_cache/memory_pool.py": COMPOSED_MEMORY_POOL,
        "srt/mem_cache/swa_memory_pool.py": COMPOSED_SWA_POOL,
        "srt/layers/__init__.py": "",
        "srt/layers/attention/__init__.py": "",
        "srt/layers/attention/flashattention_backend.py": COMPOSED_FA3_SITE,
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(text))
    return tmp_path / "release"


def test_its_capabilities_are_the_current_pools_without_the_constructors(composed_release):
    caps = probe_source(composed_release)
    assert era_of(caps) == ("current", [])
    assert missing_constructors(caps) == {"for_layer", "for_batch"}


@pytest.mark.slow
def test_a_release_of_no_named_era_is_judged_through_its_own_call_sites(tmp_path, composed_release):
    spec = f"sglang@{composed_release}"
    if missing_shared_modules():
        pytest.skip(not_ready_reason(spec))
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        *("--sut", spec, "--backend", "plain,plain_mla,fa3"),
        *("--pool", "mha,swa_mha,mla,swa_mla", "--dtype", "bf16", "--out", str(out)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "its call sites build KVWriteLoc directly" in result.stderr
    records = check_records(out)
    mine = records[records.sut == spec]
    judged = mine[mine.outcome.isin(["pass", "known_divergence"])]
    # fa3's call site read from the release fits, so it runs in every pool kind it serves.
    assert set(judged.backend) == {"plain", "plain_mla", "fa3"}
    assert set(judged[judged.backend == "fa3"].pool) == {"mha", "swa_mha", "mla"}
    # The cut is in its KVWriteLoc: the narrowed SWA write of 0.5.13/0.5.14 is not reproduced.
    assert not mine.divergence.str.contains("unsliced-swa-loc").any()
    assert not (mine.outcome == "finding").any()
