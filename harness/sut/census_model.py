"""What the harness's call-site models (backends/*.py) expect each release's write calls to be.

Data only: per backend, the files that hold its call sites and, per era, the call shapes its
modelled call site makes. `harness.sut.census` reads a release's source and compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Shape:
    door: str  # set_kv_buffer | set_mla_kv_buffer
    loc: str  # bare | KVWriteLoc | for_layer | for_batch
    target: str  # cache_loc (encoder loc on cross-attention) | out_cache_loc
    swa: str | None = None  # swa_out_cache_loc, or None
    swa_keyword: bool = False  # swa passed as the pool's swa_loc= keyword (kwarg era)
    scales: tuple[str, ...] = ()  # the scale expressions passed, () for none

    def describe(self) -> str:
        loc = {
            "bare": self.target,
            "KVWriteLoc": f"KVWriteLoc({self.target}, {self.swa})",
            "for_layer": f"KVWriteLoc.for_layer(swa_loc={self.swa})",
            "for_batch": f"KVWriteLoc.for_batch(swa_loc={self.swa})",
        }.get(self.loc, self.target)
        extra = [*self.scales] + ([f"swa_loc={self.swa}"] if self.swa_keyword else [])
        return f"{self.door}({', '.join([loc, *extra])})"


@dataclass(frozen=True)
class BackendModel:
    name: str
    files: tuple[str, ...]
    eras: dict[str, tuple[Shape, ...]]
    # Calls in these functions are outside what the backend module models, with the reason.
    unmodelled_functions: dict[str, str] = field(default_factory=dict)
    # Whole calls of this shape are known and deliberately not modelled, per era, with the reason.
    unmodelled_shapes: dict[str, tuple[tuple[Shape, str], ...]] = field(default_factory=dict)

    def expected(self, era: str) -> tuple[Shape, ...]:
        return self.eras.get(era, ())

    def unmodelled(self, era: str) -> dict[Shape, str]:
        return dict(self.unmodelled_shapes.get(era, ()))


SWA = "swa_out_cache_loc"
LAYER_SCALES = ("layer.k_scale", "layer.v_scale")
KV, MLA = "set_kv_buffer", "set_mla_kv_buffer"
ERA_NAMES = ("legacy", "kwarg", "bundled", "current")


def swa_site(
    target: str,
    scales: tuple[str, ...] = (),
    *,
    current: str,
    current_scales: tuple[str, ...] | None = None,
    swa: str = SWA,
) -> dict[str, tuple[Shape, ...]]:
    """A site that pairs the SWA loc (era_calls.write_loc): legacy the bare loc; kwarg one call
    with swa_loc= on SWA pools and one without; bundled KVWriteLoc(loc, swa); current as
    `current` names (for_layer, for_batch, or KVWriteLoc for a bare one)."""
    now = current_scales if current_scales is not None else scales
    return {
        "legacy": (Shape(KV, "bare", target, scales=scales),),
        "kwarg": (
            Shape(KV, "bare", target, swa, True, scales),
            Shape(KV, "bare", target, scales=scales),
        ),
        "bundled": (Shape(KV, "KVWriteLoc", target, swa, scales=scales),),
        "current": (Shape(KV, current, target, swa, scales=now),),
    }


def bare_site(door: str, target: str, *, current: str = "bare") -> dict[str, tuple[Shape, ...]]:
    """A site that passes a bare loc (era_calls.bare_loc): wrapped without swa_loc only in
    `current`, and only where `current` names a constructor."""
    sites = {era: (Shape(door, "bare", target),) for era in ERA_NAMES}
    if current != "bare":
        sites["current"] = (Shape(door, current, target),)
    return sites


def merge(*sites: dict[str, tuple[Shape, ...]]) -> dict[str, tuple[Shape, ...]]:
    return {
        era: tuple(dict.fromkeys(shape for site in sites for shape in site.get(era, ())))
        for era in ERA_NAMES
    }


ATTENTION = "sglang/srt/layers/attention/"
HARDWARE = "sglang/srt/hardware_backend/"

# Where each backend's call sites live; a backend with no file in a release is reported so.
BACKEND_FILES: dict[str, tuple[str, ...]] = {
    "fa3": (ATTENTION + "flashattention_backend.py",),
    "triton": (ATTENTION + "triton_backend.py",),
    "flashinfer": (ATTENTION + "flashinfer_backend.py",),
    "trtllm_mha": (ATTENTION + "trtllm_mha_backend.py",),
    "aiter": (ATTENTION + "aiter_backend.py",),
    "xpu": (ATTENTION + "xpu_backend.py",),
    "musa": (HARDWARE + "musa/attention/flashattention_backend.py",),
    "torch_native": (ATTENTION + "torch_native_backend.py",),
    "intel_amx": (ATTENTION + "intel_amx_backend.py",),
    "ascend": (HARDWARE + "npu/attention/ascend_backend.py",),
    "flashinfer_mla": (ATTENTION + "flashinfer_mla_backend.py",),
    "flashmla": (ATTENTION + "flashmla_backend.py",),
    "trtllm_mla": (ATTENTION + "trtllm_mla_backend.py",),
    "cp": ("sglang/srt/layers/utils/cp_utils.py", "sglang/srt/layers/cp/zigzag.py"),
}

_NPU_UNMODELLED = {
    name: "an NPU path backends/ascend.py does not model (only forward_extend and forward_decode)"
    for name in (
        "forward_sparse",
        "forward_dllm",
        "forward_mtp",
        "forward_decode_graph",
        "forward_mixed",
    )
}
_NPU_UNMODELLED["_cp_allgather_and_save_kv_npu"] = (
    "the NPU CP write; backends/context_parallel.py models the CUDA one"
)

_MODELS = (
    BackendModel(
        "fa3",
        BACKEND_FILES["fa3"],
        merge(
            swa_site("cache_loc", LAYER_SCALES, current="for_layer"),
            bare_site(MLA, "cache_loc", current="for_layer"),
        ),
    ),
    BackendModel(
        "triton",
        BACKEND_FILES["triton"],
        merge(
            swa_site("out_cache_loc", current="for_batch"),
            swa_site("out_cache_loc", LAYER_SCALES, current="for_batch"),
            {era: (Shape(KV, "bare", "out_cache_loc"),) for era in ("bundled",)},
        ),
    ),
    BackendModel(
        "flashinfer",
        BACKEND_FILES["flashinfer"],
        swa_site(
            "cache_loc",
            LAYER_SCALES,
            current="for_layer",
            current_scales=("*self._kv_write_scales(layer)",),
        ),
    ),
    BackendModel(
        "trtllm_mha",
        BACKEND_FILES["trtllm_mha"],
        swa_site(
            "out_cache_loc",
            LAYER_SCALES,
            current="for_batch",
            current_scales=("*self._kv_write_scales(layer)",),
        ),
    ),
    BackendModel(
        "aiter",
        BACKEND_FILES["aiter"],
        merge(
            swa_site("cache_loc", LAYER_SCALES, current="for_layer"),
            bare_site(KV, "cache_loc", current="for_layer"),
            {
                era: shapes
                for era, shapes in swa_site("out_cache_loc", current="for_batch").items()
                if era != "current"
            },
            # decode on the vectorised 5-D cache passes the descales from 0.5.13 (backends/aiter.py)
            {
                era: shapes
                for era, shapes in swa_site(
                    "out_cache_loc", LAYER_SCALES, current="for_batch"
                ).items()
                if era in ("kwarg", "bundled")
            },
            {
                "current": (
                    Shape(KV, "for_batch", "out_cache_loc", SWA, scales=LAYER_SCALES),
                    Shape(KV, "for_batch", "out_cache_loc"),
                )
            },
        ),
        unmodelled_shapes={
            "current": (
                (
                    Shape(MLA, "for_layer", "cache_loc"),
                    ("the DCP branch (dcp_world_size > 1) of MLA extend; the harness pins DCP off"),
                ),
            )
        },
    ),
    BackendModel(
        "xpu",
        BACKEND_FILES["xpu"],
        merge(
            swa_site("cache_loc", LAYER_SCALES, current="KVWriteLoc"), bare_site(MLA, "cache_loc")
        ),
    ),
    BackendModel(
        "musa",
        BACKEND_FILES["musa"],
        merge(
            swa_site("cache_loc", LAYER_SCALES, current="KVWriteLoc"), bare_site(MLA, "cache_loc")
        ),
    ),
    BackendModel(
        "torch_native", BACKEND_FILES["torch_native"], swa_site("cache_loc", current="KVWriteLoc")
    ),
    BackendModel(
        "intel_amx",
        BACKEND_FILES["intel_amx"],
        merge(
            {
                era: shapes
                for era, shapes in swa_site("cache_loc", current="KVWriteLoc").items()
                if era != "legacy"
            },
            {
                "legacy": (Shape(KV, "bare", "out_cache_loc"),),
                "current": (
                    Shape(
                        KV,
                        "KVWriteLoc",
                        "cache_loc",
                        SWA,
                        scales=("layer.k_scale_float", "layer.v_scale_float"),
                    ),
                ),
            },
        ),
    ),
    BackendModel(
        "ascend",
        BACKEND_FILES["ascend"],
        merge(swa_site("cache_loc", current="KVWriteLoc"), bare_site(KV, "out_cache_loc")),
        unmodelled_functions=_NPU_UNMODELLED,
    ),
    BackendModel(
        "flashinfer_mla",
        BACKEND_FILES["flashinfer_mla"],
        merge(
            bare_site(MLA, "out_cache_loc", current="for_batch"),
            bare_site(KV, "out_cache_loc", current="for_batch"),
        ),
    ),
    BackendModel(
        "flashmla", BACKEND_FILES["flashmla"], bare_site(KV, "out_cache_loc", current="for_batch")
    ),
    BackendModel(
        "trtllm_mla",
        BACKEND_FILES["trtllm_mla"],
        bare_site(MLA, "out_cache_loc", current="for_batch"),
    ),
    BackendModel(
        "cp",
        BACKEND_FILES["cp"],
        swa_site("cache_loc", LAYER_SCALES, current="for_layer", swa="swa_loc"),
        unmodelled_functions={
            "materialize_full_mla_kv": "CP over MLA pools is a declared skip "
            "(cp-mla) of backends/context_parallel.py"
        },
    ),
)

BACKEND_MODELS: dict[str, BackendModel] = {model.name: model for model in _MODELS}
