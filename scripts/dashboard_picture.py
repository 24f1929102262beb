"""Remake docs/dashboard.png from real runs on this machine, so the picture shows what the
dashboard shows and nothing invented:

    .venv/bin/python scripts/dashboard_picture.py [--out docs/dashboard.png]

In a temporary folder: `kvh run` of a mutant SUT (mutants/zoo/mha_scale_ignored.py, one planted
fault that many checks find, so the findings table shows a group) on three pool kinds, one of
which the mutant does not offer, and two dtypes; `kvh bench --quick`; `kvh report`. Headless
Chromium then screenshots the dashboard's first screen, 1280 x 900 px, what a reader sees before
scrolling (the verdict, the finding groups, the SUTs and throughput at a glance; the page's
tests hold it to that). The picture is refused (exit 1,
nothing written) when the page logs an error, runs wider than the window, or names a path of
this machine. About 40 s, most of it the bench.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reports.atomic import write_atomic  # noqa: E402
from reports.browser import find_browser, visit  # noqa: E402

WIDTH, HEIGHT = 1280, 900
SUT = "mutants/zoo/mha_scale_ignored.py"  # relative: the page names the SUT as it was given
# Few enough cells that the page reads at a glance; mha_fp4 is a kind the mutant does not offer.
POOLS, DTYPES = "mha,swa_mha,mha_fp4", "bf16,fp8_e4m3"
# An absolute path in the page's text: a folder of this machine that means nothing elsewhere.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|srv|var|Users|opt|mnt)/\S*")
PROBE = """({text: document.body.innerText,
  width: document.documentElement.scrollWidth, window: window.innerWidth})"""


def kvh(*arguments: str) -> int:
    """One `kvh` verb from the checkout, outside any profile the caller's shell sets."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KVH_")}
    command = [sys.executable, "-m", "harness", *arguments]
    print("$ kvh " + " ".join(arguments), flush=True)
    done = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(done.stdout[-4000:] + done.stderr[-4000:], file=sys.stderr)
    return done.returncode


def dashboard_of_real_runs(results: Path) -> Path:
    """A run with findings (exit 1), a quick bench (exit 0), and their report (exit 1)."""
    expected = (
        (("run", "--sut", SUT, "--pool", POOLS, "--dtype", DTYPES, "--out", str(results)), 1),
        (("bench", "--quick", "--out", str(results)), 0),
        (("report", str(results)), 1),
    )
    for arguments, want in expected:
        got = kvh(*arguments)
        if got != want:
            raise SystemExit(f"kvh {arguments[0]} exited {got}, expected {want}")
    return results / "report" / "dashboard.html"


def problems_of(page: dict, folders: list[Path]) -> list[str]:
    """Why the rendered page is not fit to publish ([] when it is)."""
    text = page["text"]
    named = sorted(
        {m.group(0) for m in MACHINE_PATH.finditer(text)}
        | {str(f) for f in folders if str(f) in text}
    )
    problems = [f"the page names a path of this machine: {path}" for path in named]
    if page["width"] > page["window"]:
        problems.append(f"the page is {page['width']} px wide in a {page['window']} px window")
    return problems


def publishable(path: Path, picture: bytes) -> None:
    path.write_bytes(picture)
    path.chmod(0o644)  # a temp file is private to its owner; the picture is for everyone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png")
    arguments = parser.parse_args(argv)
    if find_browser() is None:
        print("no Chromium found: install it (apt-get install chromium)", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kvh-dashboard-") as folder:
        dashboard = dashboard_of_real_runs(Path(folder) / "kvh-results")
        visited = visit(dashboard, PROBE, width=WIDTH, height=HEIGHT, full_page=False)
        problems = visited.errors + problems_of(visited.value, [Path(folder), ROOT, Path.home()])
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    write_atomic(arguments.out, lambda temp: publishable(temp, visited.screenshot))
    print(f"{arguments.out}: {len(visited.screenshot)} bytes in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
