"""Regenerate a scenario's tensors bit-for-bit on any device.

Values are drawn on CPU from a generator seeded by (seed, forward, layer) and only then moved,
so the same scenario yields the same bytes everywhere.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import numpy as np
import torch

from pools.dtypes import DTYPES, dtype_spec
from pools.kinds.fixed_geometry import DSA_INDEX_HEAD_DIM
from pools.kinds.landing import unified_swa_slot
from scenarios.model import Forward, Geometry, Scale, Scenario, divides_inputs
from scenarios.slots import hisparse_mapping_tensor, qsa_plan

# fp8 e4m3 saturates at 448: keep draws well inside it after division by scales down to 1/4.
AMPLITUDE = 8.0


def input_dtype(scenario: Scenario) -> torch.dtype:
    if scenario.input_dtype is not None:
        return DTYPES[scenario.input_dtype].dtype
    spec = dtype_spec(scenario.geometry.dtype)
    return torch.bfloat16 if spec.is_fp8 else spec.dtype


def loc_tensor(slots: list[int], scenario: Scenario, device: str) -> torch.Tensor:
    return torch.tensor(slots, dtype=getattr(torch, scenario.loc_dtype), device=device)


def mapping_tensor(scenario: Scenario, device: str) -> Optional[torch.Tensor]:
    """full_to_swa_index_mapping with SGLang's trailing -1 (so mapping[-1] == -1): a fresh
    tensor per call, since a pool may remap it in place. Built through NumPy: every execution of
    a check stages it anew, and a 2^17-slot list becomes a tensor in about 2 ms that way (14 ms
    with torch.tensor), so nothing needs to be kept on the scenario."""
    if scenario.mapping is None:
        return None
    values = np.fromiter(scenario.mapping, dtype=np.int64, count=len(scenario.mapping))
    return torch.from_numpy(np.append(values, -1)).to(device, copy=True)


def qsa_compressed_dtype(g: Geometry) -> torch.dtype:
    """The QSA indexer's compressed-key dtype: fp8 e4m3 beside an fp8 e4m3 KV cache, else bf16
    (--qsa-indexer-dtype's two storage dtypes)."""
    return torch.float8_e4m3fn if g.dtype == "fp8_e4m3" else torch.bfloat16


def scale_object(scale: Scale, device: str) -> Any:
    if scale.kind == "none":
        return None
    if scale.kind == "float":
        return float(scale.value)
    tensor = torch.tensor(scale.value, dtype=torch.float32, device=device)
    if scale.kind == "tensor":
        return tensor
    return torch.nn.Parameter(tensor, requires_grad=False)


def _draw(
    generator: torch.Generator,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    values: str,
    pool_dtype: torch.dtype,
) -> torch.Tensor:
    normal = torch.randn(shape, generator=generator, dtype=torch.float32)
    if values == "extreme":
        # Magnitudes between half and 1.25x the narrower range limit: casts saturate or overflow.
        limit = min(torch.finfo(dtype).max, torch.finfo(pool_dtype).max)
        spread = torch.rand(shape, generator=generator, dtype=torch.float32) * 0.75 + 0.5
        return (normal.sign() * spread * limit).to(dtype)
    drawn = (normal * AMPLITUDE).to(dtype)
    if values in ("special", SPECIAL_WITHOUT_NAN):
        table = _special_values(dtype, pool_dtype, nan=values == "special")
        pick = torch.randint(0, len(table), shape, generator=generator)
        where = torch.rand(shape, generator=generator) < 0.25
        drawn = torch.where(where, table[pick], drawn)
    return drawn


def _special_values(dtype: torch.dtype, pool_dtype: torch.dtype, nan: bool = True) -> torch.Tensor:
    tiny = [torch.finfo(dtype).smallest_normal / 2]
    if pool_dtype.itemsize == 1:  # fp8: values in the pool's own subnormal range
        tiny.append(torch.finfo(pool_dtype).smallest_normal / 2)
    table = [0.0, -0.0, float("inf"), float("-inf")] + ([float("nan")] if nan else [])
    table += tiny + [-t for t in tiny]
    return torch.tensor(table, dtype=torch.float32).to(dtype)


# Special values without NaN: those of a scenario whose write divides 16-bit inputs
# (scenarios.model.divides_inputs), where a NaN's sign, which an fp8 cache keeps, follows the
# machine (a whole row is the scalar tail on a CPU with wider vectors).
SPECIAL_WITHOUT_NAN = "special-without-nan"


def _values_kind(scenario: Scenario) -> str:
    divides = divides_inputs(scenario.geometry.pool, scenario.k_scale, scenario.v_scale)
    sixteen_bit = input_dtype(scenario) in (torch.bfloat16, torch.float16)
    if scenario.values == "special" and divides and sixteen_bit:
        return SPECIAL_WITHOUT_NAN
    return scenario.values


def _fused(parts: list[torch.Tensor], lead: int, device: str) -> list[torch.Tensor]:
    """The parts as column slices of one (tokens, lead + sum of widths) tensor, as a fused qkv
    projection hands them to the backend: same values, non-contiguous views."""
    rows = parts[0].shape[0]
    widths = [part[0].numel() for part in parts]
    starts = [lead + sum(widths[:index]) for index in range(len(parts))]
    fused = torch.zeros((rows, lead + sum(widths)), dtype=parts[0].dtype)
    for part, start, width in zip(parts, starts, widths):
        fused[:, start : start + width] = part.reshape(rows, width)
    fused = fused.to(device)
    return [
        fused[:, start : start + width].view(part.shape)
        for part, start, width in zip(parts, starts, widths)
    ]


# The DeepSeek V4 indexer's key quantisation (the fused store set_index_k_fused runs on CUDA:
# kernels/jit/csrc/deepseek_v4/store.cuh fused_store_indexer_cache): one float32 scale per token,
# its 128 values' absolute maximum (at least this) over e4m3's maximum. (The store's Triton form,
# ROCm's, floors at 1e-8 instead.)
DSV4_INDEX_SCALE_FLOOR = 1e-4


def dsv4_index_quant(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, 128) fp8 e4m3 keys and their (n, 1) float32 scales, as the V4 indexer quantises a
    compressed key: in float32, multiplied by the scale's reciprocal, clamped to e4m3's range."""
    values = keys.reshape(-1, DSA_INDEX_HEAD_DIM).float()
    fp8_max = torch.finfo(torch.float8_e4m3fn).max
    scale = values.abs().amax(dim=1, keepdim=True).clamp_min(DSV4_INDEX_SCALE_FLOOR) / fp8_max
    quantised = (values * (1.0 / scale)).clamp(-fp8_max, fp8_max).to(torch.float8_e4m3fn)
    return quantised, scale


def token_tensors(
    scenario: Scenario, forward_index: int, layer_id: int, device: str
) -> dict[str, Optional[torch.Tensor]]:
    """The caller's k/v (MHA) or k nope/rope (MLA) for one (forward, layer), `tokens` rows, and
    the layer's index tensors (Geometry.index_draws): a MiniMax sparse layer's idx_k/idx_v, a
    QSA full layer's token keys (`qsa_state`) and compressed keys (`qsa_ck`; the call passes the
    rows of the tokens that end a group), a DSA layer's fp8 `index_k` and float32
    `index_k_scale`. Every call returns fresh tensors (a pool may divide them in place)."""
    g = scenario.geometry
    values = _values_kind(scenario)
    parts = [
        part.clone()
        for part in _drawn(
            scenario.seed,
            forward_index,
            layer_id,
            scenario.forwards[forward_index].tokens,
            g.kind.latent,
            (g.kv_lora_rank, g.qk_rope_head_dim)
            if g.kind.latent
            else (g.head_num, g.head_dim, g.v_head_dim or g.head_dim),
            input_dtype(scenario),
            values,
            dtype_spec(g.dtype).dtype,
        )
    ]
    index_parts, index_dims = g.index_draws(layer_id)
    # A sparse layer's index k/v (a QSA or DSA layer's keys): drawn from a stream of their own.
    index_rows = (
        [
            part.clone()
            for part in _drawn(
                scenario.seed,
                forward_index,
                -1 - layer_id,
                scenario.forwards[forward_index].tokens,
                False,
                index_dims,
                input_dtype(scenario),
                values,
                dtype_spec(g.dtype).dtype,
            )
        ][: len(index_parts)]
        if index_parts
        else []
    )
    if scenario.nan_padding:
        forward = scenario.forwards[forward_index]
        padding = torch.tensor(forward.loc[: forward.tokens], dtype=torch.int64) == 0
        for part in parts + index_rows:
            part[padding] = float("nan")
    index = {name: rows.to(device) for name, rows in zip(index_parts, index_rows)}
    if "index_k" in index and not g.kind.keeps_kv:
        index["index_k"], index["index_k_scale"] = dsv4_index_quant(index["index_k"])
    elif "index_k" in index:  # what act_quant hands the DSA door: (n, 128) fp8 keys, (n, 1) fp32
        index["index_k"] = index["index_k"].reshape(-1, DSA_INDEX_HEAD_DIM).to(torch.float8_e4m3fn)
        index["index_k_scale"] = index["index_k_scale"].reshape(-1, 1).float()
    if g.kind.latent:
        nope, rope = parts[0], parts[1] if len(parts) > 1 else None
        if scenario.fused_qkv and rope is not None:
            nope, rope = _fused([nope, rope], 0, device)
        return {
            "k": nope.to(device),
            "v": nope.clone().to(device),
            "k_rope": None if rope is None else rope.to(device),
            **index,
        }
    k, v = parts
    if scenario.fused_qkv:
        k, v = _fused([k, v], g.head_num * g.head_dim, device)  # the q columns lead
    return {"k": k.to(device), "v": v.to(device), "k_rope": None, **index}


# The baseline through each era and every candidate draw the same (forward, layer) tensors of one
# scenario in turn: a few dozen draws cover one scenario's check (3 forwards x 6 layers at most).
@functools.lru_cache(maxsize=32)
def _drawn(
    seed: int,
    forward_index: int,
    layer_id: int,
    rows: int,
    is_mla: bool,
    dims: tuple,
    dtype: torch.dtype,
    values: str,
    pool_dtype: torch.dtype,
) -> tuple[torch.Tensor, ...]:
    """The CPU draws of one (forward, layer), a pure function of its arguments; callers clone."""
    generator = torch.Generator().manual_seed(
        (seed * 1_000_003 + forward_index * 1_009 + layer_id) % (2**63)
    )

    def draw(*shape: int) -> torch.Tensor:
        return _draw(generator, (rows, *shape), dtype, values, pool_dtype)

    if is_mla:
        kv_lora_rank, qk_rope_head_dim = dims
        nope = draw(1, kv_lora_rank)
        return (nope, draw(1, qk_rope_head_dim)) if qk_rope_head_dim else (nope,)
    head_num, head_dim, v_head_dim = dims
    k = draw(head_num, head_dim)
    return k, draw(head_num, v_head_dim)


class ForwardStaging:
    """The loc side of one execution, forward by forward, as a serving engine stages it.

    It owns what outlives a forward: the registered full_to_swa mapping (remapped in place or
    re-registered before a forward, as the scenario says) and the persistent loc storages that
    forwards view at an offset. SWA locs are translated once per forward from the padded loc.
    """

    def __init__(self, scenario: Scenario, device: str, pool: Any) -> None:
        self.scenario, self.device, self.pool = scenario, device, pool
        self.mapping = mapping_tensor(scenario, device)
        if self.mapping is not None:
            pool.register_mapping(self.mapping)
        if scenario.geometry.kind.hisparse:
            pool.register_mapping(hisparse_mapping_tensor(scenario.geometry, device))
        self.storages: dict[int, torch.Tensor] = {}
        self.stale_slot = decoy_slot(scenario) if scenario.stale_full_loc else None

    def begin(self, forward_index: int) -> dict[str, Any]:
        """Apply the forward's remap, then return its loc, encoder loc, their SWA locs, the
        stale full_loc the canonical call passes (None unless the scenario has one), a QSA
        pool's indexer plan, the same for every layer (scenarios.slots.qsa_plan; else None), and
        the written tokens' positions where the scenario gives them (else None)."""
        forward = self.scenario.forwards[forward_index]
        if forward.remap is not None:
            self._remap(forward.remap.updates, forward.remap.in_place)
        loc = self._loc(forward)
        encoder = (
            None
            if forward.encoder_loc is None
            else loc_tensor(forward.encoder_loc, self.scenario, self.device)
        )
        if self.mapping is not None:
            swa, encoder_swa = self.mapping[loc], None if encoder is None else self.mapping[encoder]
            if self.scenario.geometry.kind.unified_swa:  # the backend hands it physical ids
                swa, encoder_swa = (
                    None if ids is None else unified_swa_slot(self.scenario.geometry, ids)
                    for ids in (swa, encoder_swa)
                )
        elif self.scenario.stray_swa_loc:
            # Junk that a non-SWA pool must ignore: slot ids in reverse order.
            swa, encoder_swa = loc.flip(0), None if encoder is None else encoder.flip(0)
        else:
            swa = encoder_swa = None
        full = None if self.stale_slot is None else torch.full_like(loc, self.stale_slot)
        return {
            "loc": loc,
            "encoder": encoder,
            "swa": swa,
            "encoder_swa": encoder_swa,
            "full": full,
            "qsa_plan": qsa_plan(forward, loc.dtype, self.device)
            if self.scenario.geometry.kind.qsa
            else None,
            "positions": None
            if forward.positions is None
            else torch.tensor(forward.positions[: forward.tokens], device=self.device),
        }

    def _remap(self, updates: list[list[int]], in_place: bool) -> None:
        target = self.mapping if in_place else self.mapping.clone()
        if updates:
            pairs = torch.tensor(updates, dtype=torch.int64, device=self.device)
            target[pairs[:, 0]] = pairs[:, 1]
        if not in_place:
            self.mapping = target
            self.pool.register_mapping(target)

    def _loc(self, forward: Forward) -> torch.Tensor:
        if forward.loc_storage is None:
            return loc_tensor(forward.loc, self.scenario, self.device)
        storage = self.storages.get(forward.loc_storage)
        if storage is None:
            storage = self.storages[forward.loc_storage] = self._new_storage(forward.loc_storage)
        view = storage[forward.loc_offset : forward.loc_offset + len(forward.loc)]
        view.copy_(loc_tensor(forward.loc, self.scenario, self.device))
        return view

    def _new_storage(self, storage_id: int) -> torch.Tensor:
        """Long enough for every view of it plus a tail, filled with a slot no forward writes, so
        a pool that reads past its view writes a slot the oracles watch."""
        views = [f for f in self.scenario.forwards if f.loc_storage == storage_id]
        length = max(f.loc_offset + len(f.loc) for f in views) + STORAGE_TAIL
        return torch.full(
            (length,),
            decoy_slot(self.scenario),
            dtype=getattr(torch, self.scenario.loc_dtype),
            device=self.device,
        )


# Entries after the last view of a loc storage: a view never ends the storage.
STORAGE_TAIL = 3


def decoy_slot(scenario: Scenario) -> int:
    """The highest slot no forward writes (0 if every slot is written). In the written slots
    alone, not the pool's: the used ids from the top down, against top, top - 1, ...; the first
    that differs is free."""
    g = scenario.geometry
    top = g.size + g.page_size - 1
    used = torch.cat(
        [torch.tensor(f.loc + (f.encoder_loc or []), dtype=torch.int64) for f in scenario.forwards]
    )
    taken = used[(used >= 1) & (used <= top)].unique().flip(0)  # descending
    gaps = (taken != top - torch.arange(taken.numel())).nonzero()
    highest_free = top - (int(gaps[0]) if gaps.numel() else taken.numel())
    return max(highest_free, 0)
