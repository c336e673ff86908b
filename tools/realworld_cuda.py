"""Measure CUDA kernels of public projects on cunumpy's engines (issue 25's real-world harness).

Fetch the projects yourself (never commit their code) and point this script at their folders
(``--save-cases`` writes the sliced cases to one file, ``--cases`` reads them back, e.g. on a GPU
machine with ``--engine cupy``)::

    python tools/realworld_cuda.py /tmp/corpus/llm.c /tmp/corpus/SGEMM_CUDA --json out.json \\
        [--nvrtc /path/to/libnvrtc.so.13 --cuda-include /path/to/cuda/include] [--jobs 2]

For every ``.cu`` file (and ``.cuh`` holding kernels) it takes the *device slice* of the file:
the file with its project headers inlined and its host-only code blanked (namespace-scope functions without ``__global__`` or
``__device__``, macro blocks such as ``PYBIND11_MODULE(...) { ... }``, host variables and prototypes, includes
of host libraries such as PyTorch, pybind11 and the C++ containers), line numbers kept. Each
``__global__`` function of the slice is one case: a template gets a guessed instantiation (type
parameters ``float``, integers 32, bools ``true``, or its defaults).

A case is then

1. *read*: ``CudaKernel(slice, name)`` parses its signature (``check_signature=True``; if that
   fails, ``check_signature=False`` is tried and the case is marked ``unchecked``);
2. *NVRTC* (with ``--nvrtc``): compiled as the ``cupy`` engine compiles it (the kernel's own
   options, cunumpy's NVRTC stand-in headers and pre-include, CuPy's default options, the
   toolkit's include folder). A case NVRTC rejects is not valid device code as sliced, so it is
   counted apart (``nvrtc-invalid``), not against an engine;
3. *emulator*: compiled for ``emu-cuda`` with checks on (the build of a first launch); outcomes
   ``ok``, ``ok-unchecked-pointers`` (it compiled only after the emulator's fallback to raw
   pointers), ``refused`` (``NotImplementedError``: the construct is named), ``error``.

The summary counts each outcome per project and lists the first failures by class. Nothing is
launched: this measures whether real kernels are accepted; the conformance suite checks what
they compute.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import hashlib
import json
import re
import sys
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HOST_INCLUDES = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:torch/|ATen/|c10/|pybind11/|THC/|caffe2/|iostream|vector|"
    r"string|map|set|memory|algorithm|fstream|sstream|chrono|random|thread|mutex|functional|"
    r"unordered_map|tuple|utility|iomanip|cstring|helper_cuda\.h|helper_functions\.h|"
    r"helper_string\.h|helper_timer\.h|helper_image\.h|cudnn|nvToolsExt|nvtx|"
    r"unistd\.h|sys/|omp\.h|mpi\.h|npp|GL/|cuda_gl_interop)[^\n]*$",
    re.MULTILINE,
)


def _blank(text: str, start: int, stop: int) -> str:
    return text[:start] + re.sub(r"[^\n]", " ", text[start:stop]) + text[stop:]


def device_slice(text: str) -> str:
    """``text`` with its host-only code blanked (offsets and newlines kept)."""
    from cunumpy._lang.scopes import enclosing_braces
    from cunumpy._lang.tokens import tokenize

    text = HOST_INCLUDES.sub(lambda m: " " * len(m.group(0)), text)
    toks = [t for t in tokenize(text) if t.kind not in ("ws", "comment")]
    sig = [t for t in toks if t.kind != "pp"]
    kinds = enclosing_braces(sig)
    spans = []
    start = 0  # index of the first token of the current namespace-scope declaration
    k = 0
    while k < len(sig):
        t = sig[k]
        outer = all(kd in ("namespace", "linkage") for kd in kinds[k])
        if not outer:
            k += 1
            continue
        if t.text == ";":
            head = sig[start:k]
            words = {h.text for h in head}
            if head and not words & _KEEP_DECL and not (
                    len(head) >= 2 and head[0].text == "extern" and head[1].text == '"C"'):
                spans.append((head[0].start, t.start + 1))  # a host variable or prototype
            start = k + 1
            k += 1
            continue
        if t.text == "}" or (t.text == "{" and k and sig[k - 1].text in ('"C"',)) or (
                t.text == "{" and _namespace_head(sig, start, k)):
            start = k + 1
            k += 1
            continue
        if t.text == "{":
            head = sig[start:k]
            outer_words, depth = set(), 0
            for h in _after_template_heads(head):
                depth += (h.text == "(") - (h.text == ")")
                if depth == 0:
                    outer_words.add(h.text)
            words = {h.text for h in head}
            is_function = any(h.text == "(" for h in head) and not outer_words & {
                "struct", "class", "union", "enum", "=", "namespace"}
            depth, j = 0, k
            while j < len(sig):
                if sig[j].text == "{":
                    depth += 1
                elif sig[j].text == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if is_function and not words & {"__global__", "__device__"}:
                stop = sig[j].start + 1 if j < len(sig) else len(text)
                spans.append((sig[start].start if head else t.start, stop))
            start = j + 1
            k = j + 1
            continue
        k += 1
    for a, b in reversed(spans):
        text = _blank(text, a, b)
    return text


_KEEP_DECL = frozenset({
    "typedef", "using", "struct", "class", "union", "enum", "template", "__device__",
    "__constant__", "__shared__", "__managed__", "__global__", "constexpr", "const",
    "static_assert", "namespace", "__host__",
})
"""Namespace-scope declarations kept in the slice (types, device code, constants)."""


def inline_local(text: str, here: Path, include_dirs: list[str], seen: set[Path]) -> str:
    """``text`` with the includes found beside it or in ``include_dirs`` inlined (each once)."""
    from cunumpy._lang.includes import find_include, scan_includes

    out, pos = [], 0
    for m in scan_includes(text):
        found = find_include(m.group(2).strip(), m.group(1), here, tuple(include_dirs))
        if found is None:
            continue
        out.append(text[pos:m.start()])
        pos = m.end()
        if found in seen:
            continue
        seen.add(found)
        try:
            body = found.read_text(errors="replace")
        except OSError:
            continue
        body = re.sub(r"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*$", "", body, flags=re.MULTILINE)
        out.append(inline_local(body, found.parent, include_dirs, seen) + "\n")
    out.append(text[pos:])
    return "".join(out)


def _after_template_heads(head):
    """``head`` without its ``template <...>`` parts (their ``class`` is no class)."""
    out, k = [], 0
    while k < len(head):
        if head[k].text == "template" and k + 1 < len(head) and head[k + 1].text == "<":
            depth, j = 0, k + 1
            while j < len(head):
                depth += head[j].text.count("<") - head[j].text.count(">")
                if depth <= 0:
                    break
                j += 1
            k = j + 1
            continue
        out.append(head[k])
        k += 1
    return [t for t in out if t.text not in (">", ">>")]


def _namespace_head(sig, start: int, k: int) -> bool:
    words = [t.text for t in sig[start:k]]
    return bool(words) and words[0] in ("namespace", "extern") and "(" not in words


def _template_args(kernel_sig) -> tuple | None:
    args = []
    for t in kernel_sig.template:
        if t.default:
            args.append(t.default)
        elif t.kind == "type":
            args.append("float")
        elif t.ctype == "bool":
            args.append(True)
        else:
            args.append(32)
    return tuple(args)


_NVRTC = None


def _nvrtc(lib: str):
    global _NVRTC
    if _NVRTC is None:
        builtins = Path(lib).with_name("libnvrtc-builtins.so." + lib.rsplit(".so.", 1)[1] + ".0")
        if builtins.exists():
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
        _NVRTC = ctypes.CDLL(lib)
    return _NVRTC


def nvrtc_compile(lib: str, include: str, source: str, options, expression) -> tuple[bool, str]:
    """Compile as CuPy 14 compiles a RawModule (default options, include folders)."""
    nv = _nvrtc(lib)
    prog = ctypes.c_void_p()
    nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kern.cu", 0, None, None)
    opts = [f"-I{include}/cccl", *options]
    if not any("std=" in o for o in opts):
        opts.append("--std=c++17")
    opts += [f"-I{include}", "-ftz=true", "-arch=sm_90"]
    if expression:
        nv.nvrtcAddNameExpression(prog, expression.encode())
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, buf)
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    log = buf.value.decode(errors="replace")
    first = next((ln for ln in log.splitlines() if "error" in ln), log[:200])
    return rc == 0, first.strip()


def _first_error(text: str) -> str:
    for ln in text.splitlines():
        if "error" in ln:
            return re.sub(r"^\S+:\d+:\d+: ", "", ln.strip())[:200]
    return text.strip().splitlines()[0][:200] if text.strip() else ""


def run_case(item: dict) -> dict:
    """One kernel of one file (run in a worker process)."""
    from cunumpy.emulation.cuda import _variant, program_for
    from cunumpy.emulation.errors import EmulatorWarning
    from cunumpy.kernels import CudaKernel

    out = dict(item)
    source = item["slice"]
    kwargs = {"include_dirs": item["include_dirs"]}
    kernel = None
    template_args = None
    for check in (True, False):
        try:
            kernel = CudaKernel(source, item["kernel"], engine="emulator", check_signature=check,
                                template_args=template_args, **kwargs)
            break
        except TypeError as exc:
            out["read"] = f"{type(exc).__name__}: {exc}"[:300]
            if "is a template" in str(exc) and template_args is None:
                from cunumpy._lang.cuda_signature import parse_signature

                try:
                    template_args = _template_args(parse_signature(source, item["kernel"]))
                    out["template_args"] = [str(a) for a in template_args]
                    kernel = CudaKernel(source, item["kernel"], engine="emulator",
                                        template_args=template_args, **kwargs)
                    break
                except Exception as exc2:
                    out["read"] = f"{type(exc2).__name__}: {exc2}"[:300]
        except Exception as exc:
            out["read"] = f"{type(exc).__name__}: {exc}"[:300]
    if kernel is None:
        out["emu"] = "unread"
        out["nvrtc"] = "unread"
        return out
    out["checked_signature"] = kernel.check_signature
    if item.get("engine") == "cupy":  # the GPU's own NVRTC through the cupy engine
        from cunumpy.kernels import get_cuda_engine

        try:
            get_cuda_engine("cupy").compile(kernel.program)
            out["cupy"] = "ok"
        except Exception as exc:
            out["cupy"] = "error"
            out["cupy_error"] = _first_error(str(exc)) or f"{type(exc).__name__}: {exc}"[:300]
        return out
    if item.get("nvrtc_lib"):
        p = kernel.program
        ok, why = nvrtc_compile(item["nvrtc_lib"], item["cuda_include"], p.source,
                                tuple(p.options), p.name_expression)
        out["nvrtc"] = "ok" if ok else "invalid"
        if not ok:
            out["nvrtc_error"] = why
    if item.get("no_emu"):
        out["emu"] = "skipped"
        return out
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _variant(program_for(kernel), True)
        fell_back = any(issubclass(w.category, EmulatorWarning) for w in caught)
        out["emu"] = "ok-unchecked-pointers" if fell_back else "ok"
    except NotImplementedError as exc:
        out["emu"] = "refused"
        out["emu_error"] = str(exc)[:300]
    except Exception as exc:
        out["emu"] = "error"
        out["emu_error"] = _first_error(str(exc)) or f"{type(exc).__name__}: {exc}"[:300]
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def collect(roots: list[Path], extra_includes: list[str], per_file: int) -> list[dict]:
    from cunumpy._lang.cuda_signature import find_global_functions

    items = []
    for root in roots:
        files = sorted(p for p in root.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file())
        for path in files:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if "__global__" not in text:
                continue
            sliced = device_slice(inline_local(text, path.parent, extra_includes, {path}))
            try:
                names = list(dict.fromkeys(find_global_functions(sliced)))
            except Exception:
                continue
            for name in names[:per_file]:
                items.append({
                    "project": root.name, "file": str(path), "kernel": name,
                    "slice": sliced,
                    "include_dirs": [],
                })
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--nvrtc", help="libnvrtc.so to check each case against NVRTC")
    ap.add_argument("--cuda-include", help="the toolkit's include folder (cuda_fp16.h, cccl/)")
    ap.add_argument("-I", dest="includes", action="append", default=[],
                    help="extra include folder (e.g. cuda-samples' Common)")
    ap.add_argument("--per-file", type=int, default=12, help="kernels per file at most")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--save-cases", type=Path, help="write the sliced cases (.json.gz) and stop")
    ap.add_argument("--cases", type=Path, help="read sliced cases (.json.gz) instead of roots")
    ap.add_argument("--no-emu", action="store_true", help="only the NVRTC check")
    ap.add_argument("--only-valid", type=Path,
                    help="only the cases a previous --json result found NVRTC-valid")
    ap.add_argument("--engine", default="emu-cuda", choices=("emu-cuda", "cupy"),
                    help="cupy: compile each case with the cupy engine (needs a GPU)")
    args = ap.parse_args(argv)
    if args.cases:
        with gzip.open(args.cases, "rt") as f:
            saved = json.load(f)
        items = [dict(it, slice=saved["slices"][it["slice"]]) for it in saved["items"]]
    else:
        items = collect(args.roots, [str(Path(i).resolve()) for i in args.includes],
                        args.per_file)
    if args.save_cases:
        slices: dict[str, str] = {}
        keyed = []
        for it in items:
            key = hashlib.sha256(it["slice"].encode()).hexdigest()[:16]
            slices[key] = it["slice"]
            keyed.append(dict(it, slice=key))
        with gzip.open(args.save_cases, "wt") as f:
            json.dump({"slices": slices, "items": keyed}, f)
        print(f"{len(items)} cases, {len(slices)} slices written to {args.save_cases}")
        return 0
    if args.only_valid:
        valid = {(r["file"], r["kernel"]) for r in json.loads(args.only_valid.read_text())
                 if r.get("nvrtc") == "ok"}
        items = [it for it in items if (it["file"], it["kernel"]) in valid]
    for it in items:
        it["no_emu"] = args.no_emu
        it["nvrtc_lib"] = args.nvrtc
        it["cuda_include"] = args.cuda_include
        it["engine"] = args.engine
    print(f"{len(items)} kernels in {len({i['file'] for i in items})} files", flush=True)
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_case, items, chunksize=1))
    else:
        results = [run_case(i) for i in items]
    for r in results:
        r.pop("slice", None)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    summary(results)
    return 0


def args_engine_cupy(results: list[dict]) -> bool:
    """Whether the results are of the cupy engine (no emulator outcome)."""
    return any(r.get("engine") == "cupy" for r in results)


def summary(results: list[dict]) -> None:
    by_project: dict[str, Counter] = {}
    for r in results:
        c = by_project.setdefault(r["project"], Counter())
        c["kernels"] += 1
        valid = r.get("nvrtc", "ok") == "ok"
        emu = r.get("emu", "")
        c["nvrtc-valid"] += valid
        c["emu-ok"] += emu.startswith("ok") and valid
        c["emu-ok-any"] += emu.startswith("ok")
        c["unchecked-pointers"] += emu == "ok-unchecked-pointers"
    total = Counter()
    if args_engine_cupy(results):
        for r in results:
            by_project.setdefault(r["project"], Counter())["cupy-ok"] += r.get("cupy") == "ok"
        for name, c in sorted(by_project.items()):
            print(f"{name:45s} kernels {c['kernels']:4d}  cupy engine compiles {c['cupy-ok']:4d}")
        errors = Counter(re.sub(r"'[^']*'", "'…'", r.get("cupy_error", ""))[:110]
                         for r in results if r.get("cupy") == "error")
        for why, n in errors.most_common(30):
            print(f"  {n:4d}  {why}")
        return
    for name, c in sorted(by_project.items()):
        total.update(c)
        print(f"{name:45s} kernels {c['kernels']:4d}  nvrtc-valid {c['nvrtc-valid']:4d}  "
              f"emu ok (of valid) {c['emu-ok']:4d}  emu ok (all) {c['emu-ok-any']:4d}  "
              f"raw-pointer fallback {c['unchecked-pointers']}")
    print(f"{'TOTAL':45s} kernels {total['kernels']:4d}  nvrtc-valid {total['nvrtc-valid']:4d}  "
          f"emu ok (of valid) {total['emu-ok']:4d}  emu ok (all) {total['emu-ok-any']:4d}")
    classes = Counter()
    for r in results:
        if r.get("nvrtc", "ok") == "ok" and not r.get("emu", "").startswith("ok"):
            why = r.get("emu_error") or r.get("read", "")
            why = re.sub(r"\[emu-cuda kernel '[^']*'\] ", "", why)
            why = re.sub(r"'[^']*'|‘[^’]*’", "'…'", why)[:110]
            classes[why] += 1
    print("emulator failures of NVRTC-valid kernels, by message:")
    for why, n in classes.most_common(40):
        print(f"  {n:4d}  {why}")


if __name__ == "__main__":
    sys.exit(main())
