"""Open a page in headless Chromium over the DevTools protocol on a pipe (no driver package, no
network): collect console errors, evaluate an expression, and take a full-page screenshot.

Used by the dashboard's browser test and by scripts/dashboard_picture.py, which makes
docs/dashboard.png; `python -m reports.browser PAGE.html SHOT.png` screenshots any page.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


def find_browser() -> Optional[str]:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


@dataclass
class PageVisit:
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    value: Any = None  # what the expression evaluated to
    screenshot: bytes = b""


class _Pipe:
    """DevTools messages are NUL-terminated JSON on fds 3 (to the browser) and 4 (from it)."""

    def __init__(self, to_browser: int, from_browser: int, timeout_s: float):
        self.to_browser, self.from_browser, self.buffer, self.next_id = (
            to_browser,
            from_browser,
            b"",
            0,
        )
        self.timeout_s = timeout_s
        self.events: list[dict] = []

    def _read(self) -> dict:
        while b"\0" not in self.buffer:
            if not select.select([self.from_browser], [], [], self.timeout_s)[0]:
                raise TimeoutError(f"the browser sent nothing for {self.timeout_s}s")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: Optional[str] = None, **params) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict:
        while True:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method:
                return event


def _errors(events: list[dict]) -> list[str]:
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(
                "console: "
                + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append(
                f"exception: {details.get('text', '')} "
                f"{details.get('exception', {}).get('description', '')}".strip()
            )
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(f"{params['entry']['source']}: {params['entry']['text']}")
    return errors


def _above_nine(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def visit(
    page: Path,
    expression: str = "null",
    width: int = 1280,
    browser: Optional[str] = None,
    timeout_s: float = 60.0,
    height: int = 800,
    full_page: bool = True,
) -> PageVisit:
    """Load `page` in a `width` x `height` window, then evaluate `expression` (JSON-serialisable
    result) and screenshot it: the whole page, or with `full_page=False` the window alone."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError(f"no Chromium found (looked for {', '.join(BROWSERS)})")
    to_read, to_browser = os.pipe()
    from_browser, to_write = os.pipe()
    # The child's ends move above fd 9 first, so mapping them onto 3 and 4 never overwrites one.
    to_read, to_write = (_above_nine(fd) for fd in (to_read, to_write))
    with tempfile.TemporaryDirectory(prefix="kvh-chromium-", ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [browser, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            start_new_session=True,
            preexec_fn=lambda: (os.dup2(to_read, 3), os.dup2(to_write, 4)),
        )
        os.close(to_read)
        os.close(to_write)
        try:
            pipe = _Pipe(to_browser, from_browser, timeout_s)
            target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                pipe.call(f"{domain}.enable", session)
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
            pipe.call("Page.navigate", session, url=Path(page).resolve().as_uri())
            pipe.wait_for("Page.loadEventFired")
            result = pipe.call(
                "Runtime.evaluate",
                session,
                expression=f"JSON.stringify({expression})",
                returnByValue=True,
            )["result"]
            shot = pipe.call(
                "Page.captureScreenshot", session, format="png", captureBeyondViewport=full_page
            )
            return PageVisit(
                _errors(pipe.events),
                json.loads(result.get("value") or "null"),
                base64.b64decode(shot["data"]),
            )
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the browser and the helpers it started
            process.wait()
            os.close(to_browser)
            os.close(from_browser)


if __name__ == "__main__":
    visited = visit(Path(sys.argv[1]))
    Path(sys.argv[2]).write_bytes(visited.screenshot)
    print("\n".join(visited.errors) or "no console errors")
