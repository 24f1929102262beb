"""A candidate: one pool implementation, driven through one backend call site in one era."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from harness.sut.probe.capabilities import Capabilities
from reports.check_label import check_label


@dataclass(frozen=True)
class Candidate:
    sut: str  # how the user named it: builtin, sglang, a module or file
    module: Any  # the namespace with SGLang's names
    era: str
    engine: str  # store engine for builtin pools, "-" for foreign ones
    device: str
    backend: str
    mode: str = "extend"
    # What a foreign SUT probed with (harness/sut/probe/capabilities.py); None for builtin pools.
    capabilities: Optional[Capabilities] = field(default=None, compare=False)
    # The SUT runs in its own worker process (LoadedSut.in_worker): executions go there.
    in_worker: bool = field(default=False, compare=False)
    # Where the release's own backend code runs over a call site the census finds changed: what
    # the census saw (shown beside the verdict, harness/report/check_record.py).
    census_evidence: str = field(default="", compare=False)

    @property
    def foreign(self) -> bool:
        """A SUT other than the builtin pools and the judge: its own stores, no engine of ours."""
        return self.engine == "-"

    @property
    def label(self) -> str:
        return check_label(self.sut, self.era, self.engine, self.backend, self.mode, self.device)

    def as_dict(self) -> dict:
        return {
            "sut": self.sut,
            "era": self.era,
            "engine": self.engine,
            "device": self.device,
            "backend": self.backend,
            "mode": self.mode,
        }
