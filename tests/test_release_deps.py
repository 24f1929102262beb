"""A release's own dependencies are read from its metadata: its exact pins of packages this
environment has at other versions, then what those need that this environment does not satisfy
(absent packages included). The device stack is never followed, nor a pin of the release's own
of a package absent here."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sut.load.environments import IMPORT_STOP
from harness.sut.load.release_deps import needed, never_followed, requirement_for_module

HERE = {"transformers": "5.19.0", "tokenizers": "0.23.3", "torch": "2.13.0", "numpy": "2.1.0"}


def _dist(folder: Path, name: str, version: str, *requires: str) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {text}" for text in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def _here(name: str) -> str | None:
    return HERE.get(name.lower())


def test_the_release_pins_that_differ_from_here_and_only_those(tmp_path):
    _dist(
        tmp_path,
        "sglang",
        "0.5.12",
        "transformers==5.6.0",  # here at 5.19.0: its own
        "torch==2.11.0",  # the device stack: never
        "openai==2.6.1",  # absent here: stood in, never installed
        "numpy==2.1.0",  # here at that version already
        "tokenizers>=0.1",  # not a pin: the release runs with what is here
        'flashinfer==0.6; extra == "cuda"',  # an extra: not followed
    )
    assert needed(tmp_path, ["sglang"], _here, release=True) == ["transformers==5.6.0"]


def test_then_what_its_own_versions_need_that_here_does_not_satisfy(tmp_path):
    _dist(tmp_path, "sglang", "0.5.12", "transformers==5.6.0")
    _dist(tmp_path, "transformers", "5.6.0", "tokenizers<=0.23.0,>=0.22.0", "numpy>=1.17", "httpx")
    assert needed(tmp_path, ["transformers"], _here) == ["httpx", "tokenizers<=0.23.0,>=0.22.0"]
    _dist(tmp_path, "tokenizers", "0.22.2")
    _dist(tmp_path, "httpx", "0.28.1")
    assert needed(tmp_path, ["transformers"], _here) == []  # the folder now satisfies it
    assert needed(tmp_path, ["sglang"], _here, release=True) == []


def test_a_module_the_import_chain_stops_on_is_the_release_requirement_of_that_name(tmp_path):
    """0.5.16 stops on `xgrammar` (absent here), 0.5.18 on a name openai's stand-in lacks: each
    is a requirement of the release by name, so it goes into the release's folder."""
    _dist(
        tmp_path,
        "sglang",
        "0.5.18",
        "xgrammar==0.2.1",
        "openai==2.6.1",
        "sgl-kernel==0.3.21",
        "flashinfer_python==0.6.1",
        "nvidia-cutlass-dsl==4.3",
    )
    stops = {
        "sglang failed to import: missing module 'xgrammar'": "xgrammar==0.2.1",
        "ImportError: cannot import name 'ResponseTextConfig' from 'openai.types.responses' "
        "(unknown location)": "openai==2.6.1",
        "missing module 'sgl_kernel'": None,  # CUDA-only: never installed, a stand-in's job
        "missing module 'flashinfer'": None,  # no requirement of that name; and heavy anyway
        "missing module 'zmq'": None,  # not a requirement of the release
    }
    for said, wanted in stops.items():
        stop = IMPORT_STOP.search(said)
        module = (stop.group("missing") or stop.group("standin")).split(".")[0]
        assert requirement_for_module(tmp_path, "sglang", module) == wanted, said


def test_cuda_only_and_heavy_packages_are_never_followed():
    for name in (
        "torch",
        "triton",
        "nvidia-cublas-cu12",
        "cuda-python",
        "flashinfer-python",
        "sgl-kernel",
        "flash_attn",
        "vllm",
        "torchao",
    ):
        assert never_followed(name), name
    for name in ("xgrammar", "openai", "apache-tvm-ffi", "transformers"):
        assert not never_followed(name), name


def test_a_fork_is_installed_under_a_name_and_run_as_that_name():
    from harness.sut.load.environments import install_target, target_dir

    assert install_target("sglang==0.5.14") == ("sglang==0.5.14", "sglang==0.5.14")
    spec, requirement = install_target(
        "myfork=git+https://example.org/sglang.git#subdirectory=python"
    )
    assert (spec, requirement) == (
        "sglang==myfork",
        "git+https://example.org/sglang.git#subdirectory=python",
    )
    assert target_dir(spec).name == "sglang-myfork"
    with pytest.raises(ValueError, match="NAME=REQUIREMENT"):
        install_target("sglang>=0.5")


def test_the_distribution_that_installs_sglang_is_followed_whatever_its_name(tmp_path):
    from harness.sut.load.release_deps import providers

    _dist(tmp_path, "sglang-fork", "0.6.0")
    record = tmp_path / "sglang-fork-0.6.0.dist-info" / "RECORD"
    record.write_text("sglang/__init__.py,,\nsglang-fork-0.6.0.dist-info/METADATA,,\n")
    _dist(tmp_path, "tokenizers", "0.22.2")
    assert providers(tmp_path, "sglang") == ["sglang-fork"]
