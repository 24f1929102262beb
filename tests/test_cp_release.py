"""The release's own context-parallel write (backends/cp_release.py): on the ranks of `kvh cp` and
of `kvh run`'s CP group (harness/sut/worker/cp_group.py), the release builds its CP group over
gloo and its FlashAttention backend writes through its CP strategy. An unmodified release passes
there; a fault planted in its zigzag gather is a finding naming the release's frames, in both
commands, and its repro replays through the group; a fault on one rank only names that rank."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import psutil
import pytest

from scenarios.serialize import to_dict
from tests.conftest import run_kvh, scenario_named
from tests.helpers.planted_release import copy_release, replace_file

pytestmark = [pytest.mark.sglang, pytest.mark.slow, pytest.mark.e2e, pytest.mark.distributed]

ZIGZAG = Path("srt/layers/cp/zigzag.py")
RESTORE = "[chunks[i] for i in forward_batch.attn_cp_metadata.cp_reverse_index], dim=0"
# The gathered rows put back in the reverse of the release's order: every rank writes the wrong
# token at each slot (the restore step of the CP write, as the model's fixture cp_no_restore.py).
UNRESTORED = "[chunks[i] for i in reversed(forward_batch.attn_cp_metadata.cp_reverse_index)], dim=0"
GATHER = "        group.all_gather_into_tensor(gathered, x)\n"
# Rank 1 alone reverses what it gathered: only its pool is wrong.
RANK_ONE_FLIPS = GATHER + "        if self.cp_rank == 1:\n            gathered = gathered.flip(0)\n"
# Rank 1 alone raises before the gather its peer waits in.
RANK_ONE_ERROR = "rank one refuses to gather"
RANK_ONE_RAISES = (
    f"        if self.cp_rank == 1:\n            raise RuntimeError({RANK_ONE_ERROR!r})\n" + GATHER
)
OWN_CODE = "the release's own CP code"
FRAMES = "in forward_extend > zigzag.py"


def _release(folder: Path, old: str = "", new: str = "") -> str:
    """A copy of the installed release, with `old` replaced by `new` in its zigzag strategy."""
    copy = copy_release(folder)
    if old:
        source = (copy / ZIGZAG).read_text()
        assert source.count(old) >= 1, f"the release's zigzag.py no longer has {old!r}"
        replace_file(copy, ZIGZAG, source.replace(old, new))
    return f"sglang@{folder}"


def _findings(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("FINDING ")]


def _no_workers_left(folder: Path) -> None:
    """No CP worker of this test's releases (under `folder`) outlived its run: no cold rank, no
    rank forker and none of its forked ranks (which carry its command line); another test's,
    running beside it, may be alive."""
    workers = [
        process.info["cmdline"]
        for process in psutil.process_iter(["cmdline"])
        if str(folder) in " ".join(process.info["cmdline"] or ())
        and (
            "harness.cli.rank_zygote" in process.info["cmdline"]
            or (
                "harness.cli.worker" in process.info["cmdline"]
                and "--cp" in process.info["cmdline"]
            )
        )
    ]
    assert workers == []


def test_kvh_cp_judges_the_release_own_cp_write_and_finds_an_unrestored_gather(tmp_path):
    clean = run_kvh(
        "cp", "--sut", _release(tmp_path / "clean"), "--world", "2", "--pools", "mha",
        "--out", str(tmp_path / "a"),
    )  # fmt: skip
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    assert f"world 2: {OWN_CODE}" in clean.stdout
    planted = run_kvh(
        "cp", "--sut", _release(tmp_path / "planted", RESTORE, UNRESTORED), "--world", "2",
        "--out", str(tmp_path / "b"),
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout[-3000:] + planted.stderr[-3000:]
    findings = _findings(planted.stdout)
    for rank in ("rank 0/2", "rank 1/2"):  # each rank gathered wrongly into its own pool
        assert any(rank in line for line in findings), findings
    for pool in ("(mha)", "(swa_mha)", "(mla)"):
        assert any(line.endswith(pool) or f"{pool}:" in line for line in findings), pool
    assert all(f"{FRAMES}:" in line and "/cp:extend@cpu" in line for line in findings), findings


def _scenario_files(folder: Path) -> list[str]:
    """Three mha/bf16 scenarios as JSON files: `small-scaled` (the CP path: 20 tokens in three
    requests, each of 2N tokens and more) and two of ci's drawn shapes that once were false
    findings: one fp16 token with a float v_scale, too few for CP, which the release's backend
    writes itself (the pool divides the caller's v in place), as the model now does; and four
    such tokens in requests of 1, 1 and 2, enough for 2N blocks but not in each request."""
    one_token = to_dict(scenario_named("mha", "bf16", "small-scaled"))
    one_token["name"], one_token["input_dtype"] = "one-token-scaled", "fp16"
    one_token["k_scale"], one_token["v_scale"] = (
        {"kind": "none", "value": 1.0},
        {
            "kind": "float",
            "value": 0.5,
        },
    )
    one_token["forwards"] = [
        {**one_token["forwards"][0], "loc": [0], "narrow": None, "requests": None}
    ]
    short_request = {**one_token, "name": "short-request-scaled"}
    spans = [{"extend": 1, "length": 1}, {"extend": 1, "length": 1}, {"extend": 2, "length": 3}]
    short_request["forwards"] = [
        {**one_token["forwards"][0], "loc": [1, 2, 3, 4], "requests": spans}
    ]
    paths = []
    for scenario in (
        to_dict(scenario_named("mha", "bf16", "small-scaled")),
        one_token,
        short_request,
    ):
        path = folder / f"{scenario['name']}.json"
        path.write_text(json.dumps(scenario))
        paths.append(str(path))
    return paths


def test_kvh_run_runs_the_cp_cells_on_a_group_and_its_repro_replays(tmp_path):
    first, second, third = _scenario_files(tmp_path)
    clean = run_kvh(
        "run", "--sut", _release(tmp_path / "clean"), "--backend", "cp", "--scenario", first,
        "--scenario", second, "--scenario", third, "--trail", "--out", str(tmp_path / "a"),
    )  # fmt: skip
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    results = pd.read_parquet(clean.stdout.split("results: ")[1].split(",")[0])
    release = results[results.sut.str.startswith("sglang@") & (results["mode"] == "extend")]
    rows = release.set_index("scenario").release_functions
    # The release's CP path ran, not the model: its strategy built the metadata and wrote; the
    # one token went through the backend's own write.
    assert "ZigzagCPStrategy.materialize_full_kv" in rows["small-scaled"], rows.to_dict()
    assert "materialize_full_kv" not in rows["one-token-scaled"], rows.to_dict()
    assert "materialize_full_kv" not in rows["short-request-scaled"], rows.to_dict()
    planted = run_kvh(
        "run", "--sut", _release(tmp_path / "planted", RESTORE, UNRESTORED), "--backend", "cp",
        "--pool", "mha", "--out", str(tmp_path / "b"),
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout[-3000:] + planted.stderr[-3000:]
    findings = _findings(planted.stdout)
    assert findings and all(f"{FRAMES}:438 in materialize_full_kv" in f for f in findings)
    repro = findings[0].rsplit("(repro: ", 1)[1].rstrip(")")
    replayed = run_kvh("repro", repro)
    assert replayed.returncode == 1 and "reproduced" in replayed.stdout, replayed.stdout[-2000:]
    _no_workers_left(tmp_path)


def test_a_fault_on_one_rank_is_a_finding_that_names_the_rank(tmp_path):
    result = run_kvh(
        "run", "--sut", _release(tmp_path / "release", GATHER, RANK_ONE_FLIPS), "--backend", "cp",
        "--pool", "mha", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    findings = _findings(result.stdout)
    assert findings and all("rank 1 of 2: " in line for line in findings), findings
    _no_workers_left(tmp_path)


def _small_scaled_findings(tmp_path: Path, old: str, new: str) -> list[str]:
    """The findings of `kvh run --backend cp` on small-scaled against a copy with `old` replaced
    by `new` in its zigzag strategy: a failing run, whose CP workers all ended."""
    scenario, *_ = _scenario_files(tmp_path)
    result = run_kvh(
        "run", "--sut", _release(tmp_path / "release", old, new), "--backend", "cp",
        "--scenario", scenario, "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    _no_workers_left(tmp_path)
    return _findings(result.stdout)


def test_a_rank_that_raises_alone_is_the_finding_and_its_peers_are_not_waited_for(tmp_path):
    """Rank 1 raises before it joins the gather: rank 0 would wait in the collective until the
    group's timeout and then raise that timeout. The group takes rank 1's raise as the check's
    and abandons the peer that did not answer, so the finding is the release's own error. The
    finding's release trail is asked the same way: before, the trail waited for rank 0's
    timeout (35 s a finding) and then failed, so the finding named no release function."""
    findings = _small_scaled_findings(tmp_path, GATHER, RANK_ONE_RAISES)
    assert findings and all("rank 1 of 2: " in f and RANK_ONE_ERROR in f for f in findings), (
        findings
    )
    assert all("release functions run: " in f and "get_cp_strategy" in f for f in findings)


# Each request's blocks put back with the first request's block sizes: a batch of one request
# cannot tell, and a batch of requests of other lengths splits the gathered rows wrongly.
FIRST_REQUEST_SIZES = (
    "reverse_split_len.append(per_seq_block_sizes[batch_id][rank])",
    "reverse_split_len.append(per_seq_block_sizes[0][rank])",
)


def test_the_release_cuts_a_batch_of_requests_by_the_requests_it_carries(tmp_path):
    """small-scaled is three requests (5, 6 and 9 new tokens): a CP rank's batch carries them on
    the host, as a server's does, so the release's zigzag metadata has one set of blocks per
    request, and a fault in how it puts the requests' blocks back is a finding. Handed as one
    sequence (the batch without them), the release never looks at a second request."""
    findings = _small_scaled_findings(tmp_path, *FIRST_REQUEST_SIZES)
    assert findings and all("zigzag.py" in line for line in findings), findings


def test_coverage_counts_the_lines_every_rank_ran(tmp_path):
    """small-scaled's shares are 11 rows on rank 0 and 9 on rank 1: only rank 1 pads its share
    for the gather. A campaign stages a mutant by the lines the unmodified release ran, so the
    padding must count as run at the builtin scenarios; measured on rank 0 alone, it did not,
    and its mutants were judged only at --profile ci (one took 371 s there)."""
    from harness.run.mutant_reach import ran

    root = tmp_path / "release"
    scenario, *_ = _scenario_files(tmp_path)
    done = run_kvh(
        "run", "--sut", _release(root), "--backend", "cp", "--scenario", scenario, "--coverage",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    source = (root / "sglang" / ZIGZAG).read_text().splitlines()
    padding = [n for n, text in enumerate(source, 1) if "padding = [0, 0] * (x.ndim - 1)" in text]
    assert len(padding) == 1, "the release's zigzag.py no longer pads a share this way"
    assert padding[0] in ran(tmp_path / "out", root).run[str(ZIGZAG)]


# can_apply's floor moved to 8 on two ranks, build_metadata's padding as a remainder, and one of
# its closing asserts with `is`: three faults of the strategy's edges (mutants of session 24's
# campaign that kvh's cp scenarios could not tell apart), each only one edge scenario reaches.
EDGE_FAULTS = (
    ("num_tokens < self.cp_size * 2:", "num_tokens < self.cp_size << 2:"),
    ("pad_len = int(num_tokens) - sum(", "pad_len = int(num_tokens) % sum("),
    ("assert sum(split_list) == total_seq_lens", "assert sum(split_list) is total_seq_lens"),
)


def test_the_strategy_s_edges_each_catch_the_fault_only_they_reach(tmp_path):
    """The cp backend's edge scenarios (backends/focus.py CP_BATCHES) against an unmodified
    release pass; against a copy with the three EDGE_FAULTS, each is a finding of its own fault:
    an extend of one request of exactly 2N tokens written without CP (the pool scales the
    caller's k and v), a padded batch handed its seq_lens alone (the padding mis-sized), and a
    batch of 516 tokens (an int past 256 compared with `is`); small-scaled reaches none."""
    copy = copy_release(tmp_path / "planted")
    source = (copy / ZIGZAG).read_text()
    for old, new in EDGE_FAULTS:
        assert source.count(old) == 1, f"the release's zigzag.py no longer has {old!r}"
        source = source.replace(old, new)
    replace_file(copy, ZIGZAG, source)
    names = ("small-scaled", "cp-floor-scaled", "cp-padded-device-lens", "cp-wide-batch")
    files = []
    for name in names:
        files += ["--scenario", str(tmp_path / f"{name}.json")]
        (tmp_path / f"{name}.json").write_text(
            json.dumps(to_dict(scenario_named("mha", "bf16", name)))
        )
    clean = run_kvh(
        "run", "--sut", _release(tmp_path / "clean"), "--backend", "cp", *files,
        "--out", str(tmp_path / "a"),
    )  # fmt: skip
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    planted = run_kvh(
        "run", "--sut", f"sglang@{tmp_path / 'planted'}", "--backend", "cp", *files,
        "--out", str(tmp_path / "b"),
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout[-3000:] + planted.stderr[-3000:]
    found = {name: [f for f in _findings(planted.stdout) if f"`{name}`" in f] for name in names}
    assert found["small-scaled"] == [], found
    assert found["cp-floor-scaled"] and all("caller" in f for f in found["cp-floor-scaled"])
    assert found["cp-padded-device-lens"] and found["cp-wide-batch"], found
    assert all("zigzag.py:233" in f for f in found["cp-wide-batch"]), found
    _no_workers_left(tmp_path)
