"""Backends whose own release code runs on a CPU: where an SGLang SUT carries the backend class,
its cell drives that class instead of the call-site model, so the bytes compared are the ones
the release's `forward_extend` / `forward_decode` write.

Only the write is driven: the class is subclassed with its attention math (`_run_sdpa_*`, which
reads the cache after the write and has no bearing on it) left out, and is handed the smallest
model runner, ForwardBatch and layer it reads. `init_forward_metadata` (the full-to-SWA
translation) and the write call itself are the release's own. A release that reads something
those objects lack raises DriverGap, which the verdict reports as a skip naming the attribute
(the driver's gap, never a finding against the release). The driver cannot tell an attribute
the real object has from one it lacks too (a release's typo), so that, too, is a counted skip
naming the attribute, not a finding. The judge has no such class, so
the baseline stays the model: a release whose real code differs from the model shows as a
finding against the release's real code.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace
from typing import Any

from backends.context import WriteRequest

# backend name -> (module, class) in the SGLang package; the loader imports them when it can.
REAL_CODE: dict[str, tuple[str, str]] = {
    "torch_native": (
        "sglang.srt.layers.attention.torch_native_backend",
        "TorchNativeAttnBackend",
    ),
}
# ForwardBatch fields only the attention math reads: passed as None.
ATTENTION_ONLY_FIELDS = (
    "forward_mode",
    "req_pool_indices",
    "seq_lens",
    "extend_prefix_lens",
    "extend_seq_lens",
    "encoder_lens",
)


class DriverGap(Exception):
    """The release's backend read an attribute the driver's stand-in objects do not carry. Not an
    AttributeError, so that a release's getattr(x, name, default) or hasattr cannot quietly take
    another path than it would on the real object."""


class _StandIn(SimpleNamespace):
    """A model runner, ForwardBatch or layer with only what the driver knows to give."""

    def __init__(self, role: str, **fields: Any):
        super().__init__(**fields)
        object.__setattr__(self, "_role", role)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe for optional hooks
            raise AttributeError(name)
        raise DriverGap(
            f"the release's backend reads {self._role}.{name}, which backends/real_code.py does "
            "not provide"
        )


def real_class(req: WriteRequest, backend: str) -> Any:
    """The release's class for `backend`, when the SUT carries it."""
    return (getattr(req.api, "real_backends", None) or {}).get(backend)


@cache  # one subclass per release class, not one per write
def _write_only(cls: type) -> type:
    def no_attention(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    methods = {
        name: no_attention for name in ("_run_sdpa_forward_extend", "_run_sdpa_forward_decode")
    }
    return type(f"WriteOnly{cls.__name__}", (cls,), methods)


def drive(cls: type, req: WriteRequest, mode: str) -> None:
    """One layer's write of one forward through the release's own backend."""
    key = req.mla_k if req.is_mla else req.k  # MLA pools take the latent row (nope ++ rope)
    tokens, heads, head_dim = key.shape
    # What the attention math would read is passed along as None: it is left out.
    no_req_to_token = SimpleNamespace(req_to_token=None)  # only the attention math reads it
    runner = _StandIn(
        "model_runner",
        device=key.device,
        req_to_token_pool=no_req_to_token,
        token_to_kv_pool=req.pool,
    )
    backend = _write_only(cls)(runner)
    batch = _StandIn(
        "forward_batch",
        token_to_kv_pool=req.pool,  # the write door of releases before 0.5.14
        req_to_token_pool=no_req_to_token,
        out_cache_loc=req.forward_batch.out_cache_loc,
        encoder_out_cache_loc=req.forward_batch.encoder_out_cache_loc,
        **dict.fromkeys(ATTENTION_ONLY_FIELDS),
    )
    layer = _StandIn(
        "layer",
        **vars(req.layer),
        qk_head_dim=head_dim,
        tp_q_head_num=heads,
        tp_k_head_num=heads,
        scaling=1.0,
        attn_type=None,
        logit_cap=0.0,
    )
    layer.v_head_dim = req.v.shape[-1]
    query = key.new_zeros(tokens, heads * head_dim)
    # As in serving: the metadata is built from the padded loc, the layers write the narrowed one
    # (SGLang #29460 is the difference between the two).
    padded = req.forward_batch.padded_out_cache_loc
    batch.out_cache_loc = padded if padded is not None else req.forward_batch.out_cache_loc
    backend.init_forward_metadata(batch)
    batch.out_cache_loc = req.forward_batch.out_cache_loc
    forward = backend.forward_extend if mode == "extend" else backend.forward_decode
    forward(query, key, req.v, layer, batch, save_kv_cache=True)
