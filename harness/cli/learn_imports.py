"""`python -m harness.cli.learn_imports LISTING RELEASE KVH-ARGS...`: run kvh in-process, then
write to LISTING the modules a warm judge of the release folder RELEASE may import before it
forks (harness/run/forked_judges.py warm_modules). A rename campaign's first step."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional


def main(arguments: Optional[list[str]] = None) -> int:
    from harness.cli import main as kvh
    from harness.run.forked_judges import warm_modules

    listing, release, *argv = sys.argv[1:] if arguments is None else arguments
    rc = kvh([argv[0], "--in-process", *argv[1:]])
    Path(listing).write_text(json.dumps(warm_modules(dict(sys.modules), Path(release))))
    return rc


if __name__ == "__main__":
    sys.exit(main())
