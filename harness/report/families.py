"""Pool kinds by family, for the reports' folded tables: the base kinds first, then the layouts,
the pools that route writes (hybrid, sparse, sharded), and the composite pools of several
buffers a slot. Read from scenarios.model's kind tuples; a kind none names is "other"."""

from __future__ import annotations

from scenarios import model

FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", model.BASE_POOL_KINDS),
    ("layout", model.LAYOUT_POOL_KINDS),
    (
        "routed",
        model.HYBRID_LINEAR_KINDS
        + model.SPARSE_INDEX_KINDS
        + model.HISPARSE_KINDS
        + model.PAGE_INTERLEAVE_KINDS
        + model.QSA_KINDS
        + model.UNIFIED_SWA_KINDS
        + model.LAYER_SPLIT_KINDS,
    ),
    (
        "composite",
        model.SWA_DSA_KINDS
        + model.DSV4_INDEXER_KINDS
        + model.DSV4_KINDS
        + model.NVFP4_PAGE_ROW_KINDS,
    ),
)


def pool_families() -> dict[str, str]:
    """Each pool kind's family, in family order (a kind listed twice keeps its first family)."""
    families: dict[str, str] = {}
    for family, kinds in FAMILIES:
        for kind in kinds:
            families.setdefault(kind, family)
    return families
