"""Release-source catalogue: source transformations applied to a copy of an SGLang release.

Each record names files of the `sglang/` package and a pure text transform. A refactor keeps
every write byte-identical, so the harness must PASS it with as many backends running as release
code as on the unmodified release; a fault changes what is written, so the harness must report a
finding. A transform that matches nothing raises `TransformMissed`: a release where the edit does
not apply says so instead of running the unmodified release under the mutant's name.

This module is data and text only (mutants/ imports nothing of harness); how a record edits a
copy is mutants/source_edits.py, and the runner that copies a release and judges it is
harness/run/release_source.py.
"""

from __future__ import annotations

import re

from mutants.source_edits import ReleaseMutant, SourceEdit, SourceMove, chain, sub

MEMORY_POOL = "srt/mem_cache/memory_pool.py"
FORWARD_BATCH = "srt/model_executor/forward_batch_info.py"
TRITON = "srt/layers/attention/triton_backend.py"
FA3 = "srt/layers/attention/flashattention_backend.py"
SWA_MEMORY_POOL = "srt/mem_cache/swa_memory_pool.py"
KV_LOC_PLAN = "srt/mem_cache/kv_loc_plan.py"
EVERY_FILE = "**/*.py"

# The field a refactor adds to ForwardBatch, declared last so it takes a default like its
# neighbours (a dataclass field without one may not follow fields with one).
_NEW_FIELD = (
    r"\1\n    # Added by the release-source refactor: a field with a default for_batch reads.\n"
    r"    kv_write_loc_epoch: int = 0\n"
)

# A pass-through decorator, as profiling or tracing hooks wrap a door (functools.wraps keeps
# its name, signature and source reachable).
_DOOR_DECORATOR = (
    "def _traced_write_door(door):\n"
    "    import functools\n\n"
    "    @functools.wraps(door)\n"
    "    def traced(*args, **kwargs):\n"
    "        return door(*args, **kwargs)\n\n"
    "    return traced\n\n\n"
)
# fa3's MHA write with its arguments as keywords, in reverse order (the door's own names).
_FA3_MHA_WRITE = (
    r"set_kv_buffer\(\n(\s+)layer,\n\s+(KVWriteLoc(?:(?!set_).)*?),\n\s+k,\n\s+v,\n"
    r"\s+((?:layer\.)?k_scale),\n\s+((?:layer\.)?v_scale),\n"
)
_FA3_MHA_WRITE_BY_KEYWORD = (
    r"set_kv_buffer(\n\1v_scale=\4,\n\1k_scale=\3,\n\1cache_v=v,\n\1cache_k=k,\n"
    r"\1loc_info=\2,\n\1layer=layer,\n"
)
_WRITE_LOC_MODULE_HEADER = (
    '"""KVWriteLoc and its helpers, moved out of memory_pool.py (re-exported there)."""\n\n'
    "from __future__ import annotations\n\n"
    "from dataclasses import dataclass\n"
    "from typing import Optional\n\n"
    "import torch\n\n\n"
)

# KVWriteLoc's own way to take a loc apart, replacing the module-level unwrap helper: a door
# coerces what it is handed (a KVWriteLoc, or a bare loc wrapped) and unpacks it.
_WRITE_LOC_METHODS = (
    r"\1    @classmethod\n"
    r"    def coerce(cls, loc_info):\n"
    r'        """``loc_info`` as a write loc: itself, or a bare loc with no other loc."""\n'
    r"        return loc_info if isinstance(loc_info, cls) else cls(loc_info)\n\n"
    r"    def parts(self):\n"
    r'        """``(loc, swa_loc, full_loc)``."""\n'
    r"        return self.loc, self.swa_loc, self.full_loc\n\n"
    r"\2"
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
        name="write_loc_types_moved",
        kind="refactor",
        description="KVWriteLoc, its unwrap helper and write_loc_is_physical move to "
        "mem_cache/write_loc.py, re-exported from memory_pool.py (as SGLang's main moved them)",
        edits=(
            SourceMove(
                MEMORY_POOL,
                "srt/mem_cache/write_loc.py",
                ("KVWriteLoc", "unwrap_write_loc", "write_loc_is_physical"),
                _WRITE_LOC_MODULE_HEADER,
            ),
        ),
    ),
    ReleaseMutant(
        name="call_site_by_keyword",
        kind="refactor",
        description="fa3's MHA writes pass every argument by keyword, in reverse order",
        edits=(SourceEdit(FA3, sub(_FA3_MHA_WRITE, _FA3_MHA_WRITE_BY_KEYWORD, flags=re.S)),),
        pools=("mha", "swa_mha"),
        backends=("fa3",),
    ),
    ReleaseMutant(
        name="write_door_decorated",
        kind="refactor",
        description="MHATokenToKVPool.set_kv_buffer wrapped in a pass-through decorator",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                chain(
                    sub(
                        r"\nclass MHATokenToKVPool\(KVCache\):",
                        "\n" + _DOOR_DECORATOR + "class MHATokenToKVPool(KVCache):",
                        1,
                    ),
                    sub(
                        r"(\nclass MHATokenToKVPool\(KVCache\):.*?\n)(    def set_kv_buffer\(\n"
                        r"        self,\n        layer: RadixAttention,\n        loc_info,)",
                        r"\1    @_traced_write_door\n\2",
                        1,
                        re.S,
                    ),
                ),
            ),
        ),
        pools=("mha", "swa_mha"),
    ),
    ReleaseMutant(
        name="physical_mark_as_id_space",
        kind="refactor",
        description="ForwardBatch.out_cache_loc_is_physical becomes out_cache_loc_id_space, a "
        "string 'kernel' or 'virtual' that the plan's bind sets and every reader compares "
        "(SGLang PR #40328's direction)",
        edits=(
            SourceEdit(EVERY_FILE, sub(r"\bout_cache_loc_is_physical\b", "out_cache_loc_id_space")),
            SourceEdit(
                FORWARD_BATCH,
                sub(
                    r"out_cache_loc_id_space: bool = False",
                    'out_cache_loc_id_space: str = "virtual"',
                ),
            ),
            SourceEdit(
                KV_LOC_PLAN,
                sub(
                    r"(batch\.out_cache_loc_id_space = )(batch\.out_cache_loc is not None)",
                    r'\1"kernel" if \2 else "virtual"',
                ),
            ),
            SourceEdit(
                EVERY_FILE,
                sub(
                    r"physical=forward_batch\.out_cache_loc_id_space,",
                    'physical=forward_batch.out_cache_loc_id_space == "kernel",',
                ),
            ),
        ),
        pools=("mha", "swa_mha", "mla", "unified_mha", "unified_mla", "swa_unified"),
        backends=("plain", "plain_mla", "fa3", "triton"),
    ),
    ReleaseMutant(
        name="unwrap_helper_as_methods",
        kind="refactor",
        description="unwrap_write_loc goes: every door calls KVWriteLoc.coerce(loc_info).parts() "
        "(a classmethod and a method), and no function named like unwrap remains",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                chain(
                    sub(
                        r"(\nclass KVWriteLoc:\n.*?\n)(    def __post_init__\(self\):)",
                        _WRITE_LOC_METHODS,
                        1,
                        re.S,
                    ),
                    sub(r"\ndef unwrap_write_loc\(loc_info\):\n.*?\n\n\n", "\n", 1, re.S),
                ),
            ),
            SourceEdit(
                EVERY_FILE, sub(r"^(\s+)unwrap_write_loc,\n", r"\1KVWriteLoc,\n", flags=re.M)
            ),
            SourceEdit(
                EVERY_FILE, sub(r"\bunwrap_write_loc\((\w+)\)", r"KVWriteLoc.coerce(\1).parts()")
            ),
        ),
        pools=("mha", "swa_mha", "mla", "hisparse_dsa"),
        backends=("plain", "plain_mla", "fa3", "triton"),
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
    ReleaseMutant(
        name="swa_decode_untranslated",
        kind="fault",
        description="fa3's decode hands the SWA pool the untranslated out_cache_loc as its SWA loc",
        edits=(
            SourceEdit(
                FA3,
                sub(
                    r"(def forward_decode\(.*?)self\.forward_metadata\.swa_out_cache_loc",
                    r"\1forward_batch.out_cache_loc",
                    1,
                    re.S,
                ),
            ),
        ),
        pools=("swa_mha",),
        backends=("fa3",),
        expect_file="flashattention_backend.py",
    ),
    ReleaseMutant(
        name="cross_attention_at_out_cache_loc",
        kind="fault",
        description="KVWriteLoc.for_layer gives a cross-attention layer the decoder's "
        "out_cache_loc instead of encoder_out_cache_loc",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                sub(
                    r"return cls\(forward_batch\.encoder_out_cache_loc,",
                    "return cls(forward_batch.out_cache_loc,",
                    1,
                ),
            ),
        ),
        pools=("mha",),
        backends=("plain", "fa3"),
        expect_file="flashattention_backend.py",
    ),
    ReleaseMutant(
        name="page_offset_off_by_one",
        kind="fault",
        description="the head-major (HND) MHA door scatters each token one slot further into "
        "its page",
        edits=(
            SourceEdit(
                MEMORY_POOL,
                sub(r"offs = loc % self\.page_size\n", "offs = (loc + 1) % self.page_size\n", 1),
            ),
        ),
        pools=("mha_hnd",),
        backends=("plain",),
        expect_file="memory_pool.py",
    ),
)


def release_mutant_named(name: str) -> ReleaseMutant:
    for mutant in CATALOGUE:
        if mutant.name == name:
            return mutant
    known = ", ".join(m.name for m in CATALOGUE)
    raise ValueError(f"no release-source mutant {name!r} (known: {known})")
