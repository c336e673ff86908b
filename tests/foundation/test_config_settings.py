"""Every CUNUMPY_* setting is read in cunumpy.config, through one fast reader where it matters."""

from __future__ import annotations

import pathlib
import re

import pytest

from cunumpy import config

SRC = pathlib.Path(config.__file__).parent


def test_no_module_outside_config_reads_the_environment_for_a_setting():
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "config.py" and path.parent == SRC:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ|os\.getenv", line) and "CUNUMPY_" in line:
                offenders.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
            if re.search(r"os\.environ\b(?!\s*\))", line) and "_data" in line:
                offenders.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert not offenders, "read settings through cunumpy.config:\n" + "\n".join(offenders)


def test_raw_reader_sees_changes_at_once(monkeypatch):
    read = config.raw_reader("CUNUMPY_KERNEL_PORT")
    monkeypatch.delenv("CUNUMPY_KERNEL_PORT", raising=False)
    assert read() is None
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "host")
    first = read()
    assert first is not None
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "cuda")
    assert read() != first


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("ON", True), ("0", False), ("off", False), ("", None), ("auto", None),
])
def test_use_metal_values(monkeypatch, value, expected):
    monkeypatch.setenv("CUNUMPY_USE_METAL", value)
    assert config.use_metal() is expected


def test_use_metal_rejects_other_values(monkeypatch):
    monkeypatch.setenv("CUNUMPY_USE_METAL", "maybe")
    with pytest.raises(ValueError, match="CUNUMPY_USE_METAL='maybe'"):
        config.use_metal()


def test_kernel_port(monkeypatch):
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", " Metal ")
    assert config.kernel_port() == "metal"
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "auto")
    assert config.kernel_port() is None
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "gpu")
    with pytest.raises(ValueError, match="valid ports are host, cuda, metal"):
        config.kernel_port()


def test_cuda_debug_and_cxx(monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_DEBUG", "yes")
    assert config.cuda_debug() is True
    monkeypatch.delenv("CUNUMPY_CUDA_DEBUG")
    assert config.cuda_debug() is False
    monkeypatch.setenv("CUNUMPY_CXX", "  g++ -O1 ")
    assert config.cxx_command() == "g++ -O1"
    monkeypatch.setenv("CUNUMPY_CXX", " ")
    assert config.cxx_command() is None
