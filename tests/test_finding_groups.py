"""Findings grouped by signature: numbers folded, names kept, one group per cause, the largest
first, with the repro of its smallest finding."""

from __future__ import annotations

from reports.finding_groups import Signature, fold_numbers, group_findings, signature_of
from reports.records import records_frame

HEADLINE = "[bytes] written bytes differ from the baseline at buffer L{layer}.k, slot {slot}"


def test_numbers_fold_and_names_with_digits_stay():
    assert fold_numbers("buffer L12.v, slot 32, byte -1, value 1.5e-3, shape (4, 8)") == (
        "buffer L#.v, slot #, byte #, value #, shape (#, #)"
    )
    assert fold_numbers("fp8_e4m3 within e2m1 in run 20261201T115332Z-4ac96705") == (
        "fp8_e4m3 within e2m1 in run 20261201T115332Z-4ac96705"
    )


def test_signature_is_oracle_folded_message_and_pool():
    assert signature_of(HEADLINE.format(layer=0, slot=32), "mha") == Signature(
        "bytes", "written bytes differ from the baseline at buffer L#.k, slot #", "mha"
    )
    # A headline that names no oracle (an older writer) keeps its whole text as the message.
    assert signature_of("the baseline raised: boom 3", "mla") == Signature(
        "", "the baseline raised: boom #", "mla"
    )


def finding(backend: str, pool: str, detail: str, tokens: int, repro: str) -> dict:
    """One `check` row with a finding, as `kvh run` records it."""
    return {
        "backend": backend,
        "pool": pool,
        "dtype": "bf16",
        "sut": "builtin",
        "engine": "torch",
        "era": "current",
        "scenario": f"s{tokens}",
        "outcome": "finding",
        "mode": "extend",
        "tokens": tokens,
        "findings": 1,
        "detail": detail,
        "repro": repro,
    }


def test_one_group_per_signature_the_largest_first_with_its_smallest_repro():
    rows = [
        finding("plain", "mha", "[exception] raised where the baseline did not", 4, "a.json"),
        finding("plain", "mha", HEADLINE.format(layer=0, slot=32), 64, "b.json"),
        finding("fa3", "mha", HEADLINE.format(layer=1, slot=16), 2, "c.json"),
        finding("triton", "mha", HEADLINE.format(layer=0, slot=7), 16, ""),
        # The same message through another door is another group.
        finding("plain", "swa_mha", HEADLINE.format(layer=0, slot=32), 8, "d.json"),
    ]
    findings = records_frame("check", rows).assign(repro_link=lambda f: f["repro"])
    groups = group_findings(findings)
    assert [(g.signature.oracle, g.signature.door, g.count) for g in groups] == [
        ("bytes", "mha", 3),
        ("exception", "mha", 1),
        ("bytes", "swa_mha", 1),
    ]
    assert groups[0].repro == "c.json"  # the fewest tokens of those with a repro
    assert groups[0].spread("backend") == ["fa3", "plain", "triton"]
    assert groups[0].spread("no such column") == []
    assert group_findings(records_frame("check", [])) == []
