"""The package's layers import downwards only, no two modules import each other in a circle, and
every engine has one home.

Layers, bottom first (a module may import from its own layer or below):

0. base: ``config``, ``profiling``, ``_backend``, ``_convert``, ``_staging``, ``_pinning``, ``_version``,
   ``_cuda_common`` (CUDA limits and errors)
1. ``_lang``: kernel-language text (tokenizer, preprocessor, signatures, type names)
2. ``emulation``: C++ translation, runtime headers, build, cache, launch
3. ``_engines``: the seam between front ends and engines
4. ``kernels``: the front ends (``CudaKernel``, ``MetalKernel``, ``Kernel``)
5. the ``cunumpy`` namespace itself (``cunumpy/__init__.py``)
6. ``mpi``: many ranks through mpi4py (uses the namespace, conversions, profiling; the
   namespace never imports it)
7. ``testing``
8. ``cli`` (and ``cunumpy/__main__.py``)

Every ``import`` statement counts: at module level, inside a function (a lazy import is still a
dependency), under ``if TYPE_CHECKING:`` (a type is a dependency too), and a call of
``importlib.import_module`` / ``__import__`` with a literal ``cunumpy`` module name. ``ALLOWED``
lists the known exceptions, each with the reason it is there; an exception that no longer occurs
fails the test too, so the list only shrinks.

The engine rules (``docs/architecture.md``, "Where code lives"):

- every engine of the engine table has one home under ``_engines/``, a module or a package named
  after the table's spelling (``emu-cuda`` is ``_engines/emu_cuda``), which defines the engine
  class whose ``name`` is that spelling;
- no module of ``kernels/`` (the front ends) imports CuPy or MLX;
- ``emulation/`` imports nothing from ``_engines/`` or ``kernels/`` (the layer rule, with
  ``TYPE_CHECKING`` and ``importlib`` counted).
"""

from __future__ import annotations

import ast
import pathlib

import cunumpy

SRC = pathlib.Path(cunumpy.__file__).parent

LAYERS = {
    "config": 0, "profiling": 0, "_backend": 0, "_convert": 0, "_staging": 0, "_pinning": 0, "_version": 0,
    "_cuda_common": 0,
    "_lang": 1, "emulation": 2, "_engines": 3, "kernels": 4, "": 5, "_info": 5, "random": 5, "mpi": 6,
    "testing": 7, "cli": 8, "__main__": 8,
}
NAMES = {value: key or "cunumpy" for key, value in LAYERS.items()}

ALLOWED: set[tuple[str, str]] = set()
"""``(importer, imported)`` pairs tolerated, each with a comment saying why (none now)."""


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["cunumpy", *parts])


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else ""]


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("...")`` or ``__import__("...")``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def _all_imports(path: pathlib.Path, module: str,
                 modules: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import in the file: lazy ones, those under
    ``TYPE_CHECKING`` and literal ``importlib`` calls included (any package, not only ours).

    ``from a.b import c`` is an import of ``a.b.c`` when that is one of ``modules``, else of
    ``a.b``.
    """
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            target = _dynamic_import(node)
            if target is not None:
                found.append((target, node.lineno))
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((candidate if candidate in modules else base, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _imports(path: pathlib.Path, module: str, modules: set[str]) -> list[tuple[str, int]]:
    """``(imported cunumpy module, line)`` for every import of a cunumpy module in the file."""
    return [(name, line) for name, line in _all_imports(path, module, frozenset(modules))
            if name in modules]


def _graph() -> dict[str, list[tuple[str, int]]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    modules = set(files)
    return {name: _imports(path, name, modules) for name, path in sorted(files.items())}


def test_every_module_has_a_layer():
    for module in _graph():
        _layer(module)  # KeyError names a module outside every layer


def test_imports_go_downwards_only():
    used: set[tuple[str, str]] = set()
    wrong = []
    for module, imports in _graph().items():
        for target, line in imports:
            if _layer(target) <= _layer(module):
                continue
            if (module, target) in ALLOWED:
                used.add((module, target))
                continue
            wrong.append(
                f"{module}:{line} imports {target} (layer {NAMES[_layer(module)]} may not "
                f"import from layer {NAMES[_layer(target)]})"
            )
    assert not wrong, "upward imports:\n" + "\n".join(wrong)
    stale = {pair for pair in ALLOWED if _layer(pair[1]) > _layer(pair[0])} - used
    assert not stale, f"allowed upward imports that no longer occur (remove them): {stale}"


def _cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    edges = {m: sorted({t for t, _ in imports if t != m and (m, t) not in ALLOWED})
             for m, imports in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in edges[node]:
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in edges:
        if node not in index:
            connect(node)
    return out


def _is_package_init(module: str) -> bool:
    return (SRC / pathlib.Path(*module.split(".")[1:]) / "__init__.py").exists()


def test_no_import_cycles():
    graph = _graph()
    # A package's __init__ re-exporting its own modules is not a cycle of dependencies: a
    # module importing a name from its package's __init__ is reported as an import of the
    # package, and the package imports the module. Drop the edges from a package's __init__
    # to the modules inside it.
    pruned = {
        module: [(t, line) for t, line in imports
                 if not (_is_package_init(module) and t.startswith(module + "."))]
        for module, imports in graph.items()
    }
    cycles = _cycles(pruned)
    lines: list[str] = []
    for component in cycles:
        members = set(component)
        for module in component:
            lines.extend(sorted({f"  {module}:{line} imports {t}"
                                 for t, line in pruned[module] if t in members and t != module}))
    assert not cycles, "import cycles:\n" + "\n".join(lines)


def test_every_allowed_exception_still_occurs():
    edges = {(module, target) for module, imports in _graph().items() for target, _ in imports}
    stale = ALLOWED - edges
    assert not stale, f"ALLOWED lists imports that no longer occur (remove them): {sorted(stale)}"


def _engine_home(name: str) -> pathlib.Path | None:
    base = SRC / "_engines" / name.replace("-", "_")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def test_every_engine_has_one_home_named_after_it():
    from cunumpy._engines._table import ENGINES

    wrong = []
    for name in ENGINES:
        home = _engine_home(name)
        if home is None:
            wrong.append(f"engine {name!r} has no module _engines/{name.replace('-', '_')}.py "
                         "or package _engines/{name.replace('-', '_')}/")
            continue
        tree = ast.parse(home.read_text(), str(home))
        names = [
            node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            for stmt in node.body
            if isinstance(stmt, ast.Assign) and any(
                isinstance(tg, ast.Name) and tg.id == "name" for tg in stmt.targets)
            and isinstance(stmt.value, (ast.Constant, ast.Name))
            and (getattr(stmt.value, "value", None) == name or isinstance(stmt.value, ast.Name))
        ]
        if not names:
            wrong.append(f"{home.relative_to(SRC)} defines no engine class with name = {name!r}")
    assert not wrong, "\n".join(wrong)


def test_front_ends_import_neither_cupy_nor_mlx():
    wrong = []
    for path in sorted((SRC / "kernels").rglob("*.py")):
        module = _module_name(path)
        for name, line in _all_imports(path, module):
            if name.split(".")[0] in ("cupy", "cupyx", "mlx"):
                wrong.append(f"{module}:{line} imports {name} (engines run launches; move the "
                             "code to the engine's module under _engines/)")
    assert not wrong, "\n".join(wrong)


def test_the_emulator_imports_no_engine_and_no_front_end():
    wrong = []
    for path in sorted((SRC / "emulation").rglob("*.py")):
        module = _module_name(path)
        for name, line in _all_imports(path, module):
            if name.startswith(("cunumpy._engines", "cunumpy.kernels")):
                wrong.append(f"{module}:{line} imports {name}")
    assert not wrong, "emulation/ must stand alone:\n" + "\n".join(wrong)
