"""PoolKind: one record per pool kind, the interface between a kind and what tests it.

After PyTorch's OpInfo: what a kind is (its SGLang class, the eras whose call sites it serves, its
family and its traits) is stated once here, and the scenario model, the planner and the loader
read it, instead of each re-deriving it from the kind's name. A record is validated when it is
registered (pools/kinds/registry.py), so a contradictory one fails at import, not in a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from pools.kinds.layer_buffers import LayerBuffers, token_major

ERAS = ("legacy", "kwarg", "bundled", "current")
FAMILIES = ("token-major", "layout", "hybrid", "composite")
Door = Union[str, tuple[str, str]]


@dataclass(frozen=True)
class PoolKind:
    name: str
    sglang_class: str  # the class a SUT must offer for the kind's cells (SGLang's spelling)
    family: str  # one of FAMILIES
    order: int  # where the kind stands in POOL_KINDS (reports, the run's cell order)
    eras: tuple[str, ...] = ERAS  # the eras whose call sites write this pool; the first: its truth
    base: bool = False  # one of SGLang's four base pools (MHA, MLA and their SWA pools)
    latent: bool = False  # MLA: one latent row a token (kv_lora_rank + rope), or the V4 indexer's
    swa: bool = False  # a sliding-window pool: takes swa_loc, translates through a mapping
    keeps_kv: bool = True  # False: indexer keys alone (no K/V doors that write)
    fp4: bool = False  # packed e2m1 payload with block scales
    linear_layers: bool = False  # a hybrid linear pool: linear-attention layers keep no KV
    qsa: bool = False  # QSA's compressed sparse indexer beside the full layers' KV
    sparse_index: bool = False  # MiniMax sparse: index K (and V) sub-pools on sparse layers
    hisparse: bool = False  # writes land at a HiSparse mapping's device slot
    page_interleave: bool = False  # pages striped across a shard group; a rank's rows only
    layer_split: bool = False  # a rank keeps a contiguous share of the layers
    unified_swa: bool = False  # full and SWA sub-pools in one shared byte buffer
    unified_draft: bool = False  # a speculative draft's lanes fused into the target's entries
    dsa_mla: bool = False  # a DSATokenToKVPool: MLA K/V beside the DSA indexer keys
    dsa_index: bool = False  # keeps DSA indexer keys (set_index_k_scale_buffer)
    dsv4: bool = False  # DeepSeek V4 main-KV: one K-only latent row on 64-token pages
    nvfp4_page_rows: bool = False  # MiniMax M3 NVFP4: page rows of packed K, V and index K
    full_loc_by_design: bool = False  # full layers write at a given full_loc, not at loc
    # A pipeline-parallel rank's pool is built past layer 0 (start_layer, end_layer): its doors
    # index each layer's buffer at layer_id - start_layer (Geometry.start_layer).
    pipeline_rank: bool = False
    # A decode-context-parallel rank's pool (Geometry.dcp_size, dcp_rank): an MHA pool's door
    # takes a mask of the tokens the rank keeps (Forward.positions); an MLA pool keeps the ids
    # it owns itself (id % dcp_size == dcp_rank), at row id // dcp_size.
    dcp_rank: bool = False
    # Its fixed geometry, as the scenario strategies and defaults draw it:
    v_as_k: bool = False  # V is as wide as K (its constructor takes no V width of its own)
    rope_required: bool = False  # an MLA row whose rope part is never empty
    word_rows: bool = False  # rows split into 16-byte words (aiter's 5-D, the unified entries)
    page_multiple: int = 1  # page_size is a multiple of this, and at least this
    page_major: bool = False  # a page's rows head-major (HND): page_size == head_num is a case
    # A fixed row wider than a small byte budget holds at 2^17 slots: its large pools' budget.
    reach_floor_bytes: int = 0
    # Why the value oracle does not judge this kind's bytes against the input ("": it does).
    values_judged_elsewhere: str = ""
    # What the kind's constructor or store asserts of a geometry, beyond what its traits imply
    # (pools/kinds/geometry_rules.py): each says why a geometry cannot be this kind's, or None.
    geometry_rules: tuple[Callable[[Any], Optional[str]], ...] = ()
    # The doors its cells call beyond set_kv_buffer (and an MLA kind's set_mla_kv_buffer): a
    # door of its class, or (class, door) of a sub-pool class it hands the write on to. The
    # write-door census (harness/sut/probe/write_doors.py) reads them.
    doors: tuple[Door, ...] = ()
    # Its buffers for a geometry and a layer: each one's name, how to read it from a pool, and
    # its rows, one a slot (pools/kinds/layer_buffers.py). Its family's helper; the token-major
    # one reads SGLang's get_key_buffer / get_value_buffer and the index buffers a layer keeps.
    buffers: LayerBuffers = token_major
    # A kind declared outside this tree (KVH_KIND_PATHS): the backends whose call sites write it,
    # since their entries cannot name it (backends/registry.py adds it to them, and to the value
    # oracle's scope of each that has one, unless values_judged_elsewhere says otherwise).
    backends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if self.family not in FAMILIES:
            problems.append(f"family {self.family!r} is not one of {FAMILIES}")
        if not self.eras or any(era not in ERAS for era in self.eras):
            problems.append(f"eras {self.eras} must be a non-empty subset of {ERAS}")
        if self.base and self.family != "token-major":
            problems.append("a base kind is token-major")
        if self.dsa_mla and not (self.latent and self.dsa_index):
            problems.append("a DSA pool keeps MLA rows and indexer keys")
        if self.unified_draft and not self.unified_swa:
            problems.append("a fused draft pool is a unified SWA pool")
        if self.qsa and not self.linear_layers:
            problems.append("a QSA pool is a hybrid linear pool")
        if self.rope_required and not self.latent:
            problems.append("a rope part is an MLA row's")
        if self.v_as_k and self.latent:
            problems.append("an MLA row has no V width")
        if self.page_multiple < 1:
            problems.append("page_multiple is 1 or more")
        if self.pipeline_rank and self.family not in ("token-major", "layout"):
            problems.append("a pipeline rank's pool is a token-major or layout one")
        if self.dcp_rank and (self.family != "token-major" or self.swa):
            problems.append("a DCP rank's pool is a token-major MHA or MLA one")
        if not self.keeps_kv and not self.dsa_index:
            problems.append("a kind that keeps no K/V must keep indexer keys")
        if problems:
            raise ValueError(f"pool kind {self.name}: " + "; ".join(problems))

    @property
    def current_only(self) -> bool:
        return self.eras == ("current",)

    @property
    def write_doors(self) -> tuple[Door, ...]:
        """The doors its cells call: its own, else set_kv_buffer (and set_mla_kv_buffer, the MLA
        backends' call, on a latent kind)."""
        if self.doors:
            return self.doors
        return ("set_kv_buffer", "set_mla_kv_buffer") if self.latent else ("set_kv_buffer",)


def names(*kinds: PoolKind) -> tuple[str, ...]:
    """The kinds' names, in the order given: how code outside pools/kinds/ names a kind (a
    record it imports, so a renamed or removed kind fails at import, not in a run)."""
    return tuple(kind.name for kind in kinds)
