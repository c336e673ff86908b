"""Every CUNUMPY_* setting is read in cunumpy.config, through one fast reader where it matters."""

from __future__ import annotations

import ast
import itertools
import pathlib
import re

import pytest

from cunumpy import config

SRC = pathlib.Path(config.__file__).parent


_ENV_MODULES = {"os", "posix", "nt"}
_ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
ALLOWED = {
    # module (relative to the package) -> environment variables it may read itself: not
    # cunumpy settings, but facts about the process it runs in.
    "testing/_markers.py": {"PYTEST_CURRENT_TEST"},  # inside a running pytest test?
    "testing/_mlx.py": {"MLX_DISABLE_COMPILE"},  # MLX's own switch, honoured as MLX does
    "testing/cupy_on_cpu/_util.py": {  # CuPy's own variables, read as cupy/_util.pyx does
        "CUPY_EXPERIMENTAL_SLICE_COPY", "CUPY_CUDA_ARRAY_INTERFACE_SYNC",
        "CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION", "CUPY_DLPACK_EXPORT_VERSION"},
}


def environment_uses(source: str) -> list[tuple[int, str, set[str]]]:
    """Every use of the process environment in ``source``: (line, what, the string constants of
    its statement). Catches ``os.environ`` / ``os.environb`` (any use: ``get``, ``[...]``, ``in``,
    ``_data``, ``copy``), ``os.getenv`` / ``getenvb`` / ``putenv`` / ``unsetenv``, through any
    alias (``import os as o``, ``from os import environ as env``, ``posix``, ``nt``) and
    ``from os import *``."""
    tree = ast.parse(source)
    modules: set[str] = set()
    names: dict[str, str] = {}
    found: list[tuple[int, str, set[str]]] = []
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    owner: dict[int, ast.stmt] = {}
    for st in sorted(statements, key=lambda n: (n.lineno, -(n.end_lineno or n.lineno))):
        for node in ast.walk(st):
            owner[id(node)] = st  # the innermost statement wins (visited last)
    def constants(node: ast.AST) -> set[str]:
        st = owner.get(id(node), node)
        return {c.value for c in ast.walk(st) if isinstance(c, ast.Constant)
                and isinstance(c.value, str)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _ENV_MODULES:
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom) and node.module in _ENV_MODULES:
            for a in node.names:
                if a.name == "*":
                    found.append((node.lineno, f"from {node.module} import *", set()))
                elif a.name in _ENV_NAMES:
                    names[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append((node.lineno, f"{node.value.id}.{node.attr}", constants(node)))
        elif isinstance(node, ast.Name) and node.id in names:
            found.append((node.lineno, names[node.id], constants(node)))
    return sorted(found)


@pytest.mark.parametrize("code", [
    'import os\nx = os.environ.get("CUNUMPY_X")',
    'import os\nx = os.environ["CUNUMPY_X"]',
    'import os\nx = "CUNUMPY_X" in os.environ',
    'import os\nx = os.getenv("CUNUMPY_X")',
    'import os\nVAR = "CUNUMPY_X"\nx = os.environ.get(VAR)',
    'import os\nx = os.environ.get(\n    "CUNUMPY_X",\n    "",\n)',
    'import os as _o\nx = _o.environ.get("CUNUMPY_X")',
    'from os import environ\nx = environ.get("CUNUMPY_X")',
    'from os import getenv as g\nx = g("CUNUMPY_X")',
    'from os import *\nx = environ["CUNUMPY_X"]',
    'import os\nx = os.environb.get(b"CUNUMPY_X")',
    'import os\nd = os.environ._data',
    'import posix\nx = posix.environ[b"CUNUMPY_X"]',
    'import os\ndef f():\n    return os.environ.copy()',
])
def test_every_form_of_reading_the_environment_is_found(code):
    uses = environment_uses(code)
    assert uses, code
    assert all(not (consts & {"PYTEST_CURRENT_TEST"}) for _, _, consts in uses)


def test_no_module_outside_config_reads_the_environment():
    """Settings are read in cunumpy/config.py only (each documented where it is defined);
    elsewhere only the non-cunumpy variables of ALLOWED, named as literals in the statement."""
    offenders = []
    used = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "config.py":
            continue
        for line, what, consts in environment_uses(path.read_text()):
            allowed = ALLOWED.get(rel, set())
            if not consts & allowed or any(c.startswith("CUNUMPY_") for c in consts):
                offenders.append(f"{rel}:{line}: {what}")
            used |= {(rel, v) for v in consts & allowed}
    assert not offenders, "read settings through cunumpy.config:\n" + "\n".join(offenders)
    stale = {(m, v) for m, vs in ALLOWED.items() for v in vs} - used
    assert not stale, f"ALLOWED entries no longer used: {sorted(stale)}"


def test_every_setting_is_documented_in_config():
    """Every ``CUNUMPY_*`` variable named anywhere in the package is documented in config.py, in
    the docstring of the function (or constant) that reads it, or in the module docstring."""
    tree = ast.parse(pathlib.Path(config.__file__).read_text())
    documented = set()
    docs = [ast.get_docstring(tree) or ""]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            docs.append(ast.get_docstring(node) or "")
    body = tree.body
    for prev, node in itertools.pairwise(body):  # a string after an assignment documents it
        if isinstance(prev, ast.Assign | ast.AnnAssign) and isinstance(node, ast.Expr) and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            docs.append(node.value.value)
    for text in docs:
        documented |= set(re.findall(r"CUNUMPY_[A-Z0-9_]+", text))
    named = {}
    for path in SRC.rglob("*.py"):
        for var in re.findall(r"CUNUMPY_[A-Z0-9_]*[A-Z0-9]", path.read_text()):
            named.setdefault(var, path.relative_to(SRC).as_posix())
    named.pop("CUNUMPY_REQUIRE", None)  # "CUNUMPY_REQUIRE_*" in a message names both
    missing = {v: where for v, where in named.items() if v not in documented}
    assert not missing, f"settings without documentation in config.py: {missing}"


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
