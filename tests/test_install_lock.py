"""Two installs of one release at once (harness/sut/load/install_lock.py): the second waits for
the first's lock, then reuses its folder; pip writes the release once. pip is faked: the test
drives the real install() and its real flock, and needs no network."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.sut.load import environments, install_lock

SPEC = "sglang==0.0.1"


@pytest.fixture
def fake_pip(tmp_path, monkeypatch):
    """install() with a pip that, for `--target DIR`, writes an sglang package into DIR (and
    waits on `release` first, so a second install is sure to arrive while it holds the lock)."""
    monkeypatch.setenv("KVH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(environments, "missing_shared_modules", lambda: [])
    monkeypatch.setattr(environments, "_own_dependencies", lambda *a, **k: [])
    monkeypatch.setattr(environments, "_what_its_import_needs", lambda *a, **k: [])
    release, targets = threading.Event(), []

    def run(command, check):
        if "--target" in command:
            target = Path(command[command.index("--target") + 1])
            targets.append(target)
            assert release.wait(60), "the second install never came to the lock"
            (target / "sglang").mkdir(parents=True)
            (target / "sglang" / "__init__.py").write_text("")

    monkeypatch.setattr(environments.subprocess, "run", run)
    return release, targets


def test_a_second_concurrent_install_waits_then_reuses_the_first(fake_pip, monkeypatch):
    release, targets = fake_pip
    waited: list[str] = []
    original = install_lock.held

    def held(lock_file, what, on_wait=None):
        # The real lock; being made to wait is what lets the first install finish.
        return original(lock_file, what, lambda w: (waited.append(w), release.set()))

    monkeypatch.setattr(install_lock, "held", held)
    results: dict[str, tuple[Path, bool]] = {}

    def install(name: str) -> None:
        results[name] = environments.install(SPEC, SPEC, Path("requirements.txt"))

    first = threading.Thread(target=install, args=("first",))
    first.start()
    while not targets:  # the first holds the lock and is inside pip
        first.join(0.01)
    second = threading.Thread(target=install, args=("second",))
    second.start()
    first.join(60)
    second.join(60)
    folder = environments.target_dir(SPEC)
    assert results == {"first": (folder, True), "second": (folder, False)}
    assert waited == [SPEC] and len(targets) == 1
    assert environments.installed(SPEC) == folder and (folder / "sglang").is_dir()
    assert not folder.with_name(folder.name + ".partial").exists()


def test_an_install_alone_does_not_wait(fake_pip):
    release, targets = fake_pip
    release.set()
    folder, fresh = environments.install(SPEC, SPEC, Path("requirements.txt"))
    assert fresh and environments.installed(SPEC) == folder and len(targets) == 1
    assert environments.install(SPEC, SPEC, Path("requirements.txt")) == (folder, False)
