"""Inline PTX (``asm(...)`` statements) as the C++ the emulator compiles.

Real kernels use a handful of PTX forms for what CUDA C++ does not spell: special registers
(``mov.u32 %0, %%laneid;``), warp shuffles (``shfl.sync.bfly.b32``), loads and stores with cache
qualifiers (``ld.global.nc.v4.f32``), conversions (``cvt.rn.f16.f32``, ``cvt.rn.bf16x2.f32``)
and bit tricks (``prmt.b32``, ``lop3.b32``, ``bfe``, ``bfind``, ``vabsdiff4...add``). :func:`rewrite_asm` replaces each
``asm [volatile] ("..." : outputs : inputs [: clobbers]);`` whose instructions are all of these
by a C++ block that computes the same bits:

- each operand is read into a register of its constraint's width (``h`` 16 bits, ``r``/``f``
  32, ``l``/``d`` 64; ``f``/``d`` by their bits), the instructions work on those bits as PTX
  does (an instruction's type says how it reads them), and outputs are written back through
  their constraint's type (``"+r"`` operands both ways);
- ``%laneid``, ``%warpid``, ``%lanemask_*``, ``%tid``/``%ntid``/``%ctaid``/``%nctaid``, ``%smid``
  (the block's linear index modulo the 132 SMs of an H200), ``%nsmid``, ``%clock``/``%clock64``
  and ``%globaltimer`` (counters), ``%warpsize``;
- ``shfl.sync`` becomes the matching ``__shfl_*_sync`` (the width from operand ``c`` as CUDA
  encodes it), so lockstep and its undefined-behaviour checks apply; loads and stores of any
  state space and cache qualifier are plain accesses; ``membar``/``fence`` are
  ``__threadfence()``; ``bar.sync`` with no thread count is ``__syncthreads()``.

Any other instruction raises :class:`NotImplementedError` naming ``emu-cuda`` and the
instruction (``mma.sync``, ``ldmatrix``, ``cp.async``, ...). The block keeps the statement's
newlines, so line numbers do not move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cunumpy._lang.edits import apply_edits
from cunumpy._lang.tokens import tokenize

__all__ = ["rewrite_asm"]

_REG = {"h": ("uint16_t", 16), "r": ("uint32_t", 32), "f": ("uint32_t", 32),
        "l": ("uint64_t", 64), "d": ("uint64_t", 64), "n": ("uint64_t", 64),
        "c": ("uint16_t", 16), "b": ("uint16_t", 16)}


@dataclass
class _Operand:
    constraint: str  # without = + & modifiers
    expr: str
    output: bool
    inout: bool
    name: str | None


class _Refused(Exception):
    pass


def _unescape(literal: str) -> str:
    body = literal[literal.index('"') + 1 : -1]
    return bytes(body, "utf-8").decode("unicode_escape")


def _split_top(tokens, sep=","):
    parts, depth, cur = [], 0, []
    for t in tokens:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append(cur)
            cur = []
            continue
        cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def _operands(tokens, output: bool) -> list[_Operand]:
    ops = []
    for part in _split_top(tokens):
        name = None
        k = 0
        if part and part[0].text == "[":
            name = part[1].text
            k = 3
        if k >= len(part) or part[k].kind != "string":
            raise _Refused("an operand without a constraint string")
        cons = _unescape(part[k].text)
        expr = "".join(t.text if t.kind != "ws" else " " for t in part[k + 1 :]).strip()
        letters = cons.replace("=", "").replace("+", "").replace("&", "")
        ops.append(_Operand(letters[:1] or "r", expr, output, "+" in cons, name))
    return ops


def _statement(sig, k):
    """``(end index, template, operands)`` of the asm statement whose keyword is ``sig[k]``."""
    j = k + 1
    while j < len(sig) and sig[j].text in ("volatile", "__volatile__", "inline", "goto"):
        j += 1
    if j >= len(sig) or sig[j].text != "(":
        return None
    depth, end = 0, -1
    for m in range(j, len(sig)):
        if sig[m].text == "(":
            depth += 1
        elif sig[m].text == ")":
            depth -= 1
            if depth == 0:
                end = m
                break
    if end < 0:
        return None
    inner = sig[j + 1 : end]
    sections, cur, depth = [], [], 0
    for t in inner:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        if depth == 0 and t.text in (":", "::"):
            sections.append(cur)
            cur = []
            if t.text == "::":
                sections.append([])
            continue
        cur.append(t)
    sections.append(cur)
    strings = [t for t in sections[0] if t.kind == "string"]
    if not strings or len(strings) != len(sections[0]):
        raise _Refused("an instruction string built by a macro or an expression")
    template = "".join(_unescape(s.text) for s in strings)
    outs = _operands(sections[1], True) if len(sections) > 1 else []
    ins = _operands(sections[2], False) if len(sections) > 2 else []
    semi = end + 1 if end + 1 < len(sig) and sig[end + 1].text == ";" else end
    return semi, template, outs + ins


_SPECIAL = {
    "laneid": "::cn::cuda::ptx_lane(threadIdx, blockDim)",
    "warpid": "(::cn::cuda::ptx_linear(threadIdx, blockDim) >> 5)",
    "lanemask_eq": "(1u << ::cn::cuda::ptx_lane(threadIdx, blockDim))",
    "lanemask_lt": "((1u << ::cn::cuda::ptx_lane(threadIdx, blockDim)) - 1u)",
    "lanemask_le": "((2u << ::cn::cuda::ptx_lane(threadIdx, blockDim)) - 1u)",
    "lanemask_gt": "~((2u << ::cn::cuda::ptx_lane(threadIdx, blockDim)) - 1u)",
    "lanemask_ge": "~((1u << ::cn::cuda::ptx_lane(threadIdx, blockDim)) - 1u)",
    "smid": "::cn::cuda::ptx_smid(blockIdx, gridDim)", "nsmid": "132u", "warpsize": "32u",
    "clock": "(uint32_t)::clock64()", "clock64": "(uint64_t)::clock64()",
    "globaltimer": "(uint64_t)::clock64()",
    "tid.x": "threadIdx.x", "tid.y": "threadIdx.y", "tid.z": "threadIdx.z",
    "ntid.x": "blockDim.x", "ntid.y": "blockDim.y", "ntid.z": "blockDim.z",
    "ctaid.x": "blockIdx.x", "ctaid.y": "blockIdx.y", "ctaid.z": "blockIdx.z",
    "nctaid.x": "gridDim.x", "nctaid.y": "gridDim.y", "nctaid.z": "gridDim.z",
}

_TYPES = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
          "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64,
          "f16x2": 32, "bf16x2": 32}
_CVT_CODE = {"u8": 1, "u16": 2, "u32": 3, "u64": 4, "s8": 5, "s16": 6, "s32": 7, "s64": 8,
             "f16": 9, "bf16": 10, "f32": 11, "f64": 12, "b8": 1, "b16": 2, "b32": 3, "b64": 4}
_RND = {"rn": 0, "rz": 1, "rm": 2, "rp": 3, "rna": 0, "rni": 10, "rzi": 11, "rmi": 12, "rpi": 13}
"""Rounding codes of ptx_cvt: 0-3 round a float result, 10-13 round to an integer."""


class _Translator:
    def __init__(self, ops: list[_Operand]) -> None:
        self.ops = ops
        self.named = {o.name: i for i, o in enumerate(ops) if o.name}

    def reg(self, text: str) -> str:
        """The C++ expression of one PTX operand (a register, a special register, a number)."""
        text = text.strip()
        m = re.fullmatch(r"%(\d+)|%\[(\w+)\]", text)
        if m:
            index = int(m.group(1)) if m.group(1) is not None else self.named[m.group(2)]
            return f"cn_r{index}"
        if text.startswith("%") and text[1:] in _SPECIAL:
            return _SPECIAL[text[1:]]
        m = re.fullmatch(r"0[fF]([0-9a-fA-F]{8})", text)
        if m:
            return f"0x{m.group(1)}u"
        m = re.fullmatch(r"0[dD]([0-9a-fA-F]{16})", text)
        if m:
            return f"0x{m.group(1)}ull"
        if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?", text):
            return f"(uint64_t)({text.rstrip('uU')}ll)"
        raise _Refused(f"the operand {text!r}")

    def vector(self, text: str) -> list[str]:
        text = text.strip()
        if text.startswith("{") and text.endswith("}"):
            return [self.reg(t) for t in text[1:-1].split(",")]
        return [self.reg(text)]

    def address(self, text: str) -> str:
        m = re.fullmatch(r"\[\s*([^\]+]+?)\s*(?:\+\s*(-?\w+))?\s*\]", text.strip())
        if not m:
            raise _Refused(f"the address {text!r}")
        base = self.reg(m.group(1))
        off = m.group(2)
        return f"((uint64_t)({base}) + {int(off, 0)})" if off else f"(uint64_t)({base})"

    def instruction(self, ins: str) -> str:
        ins = ins.strip()
        if not ins:
            return ""
        head, _, rest = ins.partition(" ")
        parts = head.split(".")
        op = parts[0]
        mods = parts[1:]
        args = _args(rest)
        if op == "mov":
            if len(args) != 2:
                raise _Refused(head)
            dst, src = args
            if dst.startswith("{"):  # unpack a wide register into parts
                regs = self.vector(dst)
                width = _TYPES[mods[-1]] // len(regs)
                s = self.reg(src)
                return " ".join(
                    f"{r} = (({s}) >> {width * i}) & {hex((1 << width) - 1)}ull;"
                    for i, r in enumerate(regs))
            if src.startswith("{"):  # pack parts into a wide register
                regs = self.vector(src)
                width = _TYPES[mods[-1]] // len(regs)
                packed = " | ".join(f"((uint64_t)({r}) << {width * i})" for i, r in enumerate(regs))
                return f"{self.reg(dst)} = {packed};"
            return f"{self.reg(dst)} = {self.reg(src)};"
        if op == "shfl" and "sync" in mods:
            if len(args) != 5 or "|" in args[0]:
                raise _Refused(ins)
            mode = next((m for m in mods if m in ("up", "down", "bfly", "idx")), None)
            fn = {"up": "__shfl_up_sync", "down": "__shfl_down_sync", "bfly": "__shfl_xor_sync",
                  "idx": "__shfl_sync"}[mode]
            d, a, b, c, mask = (self.reg(x) for x in args)
            return (f"{d} = {fn}((unsigned)({mask}), (uint32_t)({a}), (int)({b}), "
                    f"32 - (int)((({c}) >> 8) & 0x1f));")
        if op in ("ld", "st"):
            t = next((m for m in reversed(mods) if m in _TYPES), None)
            if t is None:
                raise _Refused(head)
            size = _TYPES[t] // 8
            ctype = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}[size]
            if op == "ld":
                regs, addr = self.vector(args[0]), self.address(args[1])
                return " ".join(
                    f"{r} = ::cn::cuda::ptx_load<{ctype}>({addr} + {size * i});"
                    for i, r in enumerate(regs))
            addr, regs = self.address(args[0]), self.vector(args[1])
            return " ".join(f"::cn::cuda::ptx_store<{ctype}>({addr} + {size * i}, {r});"
                            for i, r in enumerate(regs))
        if op == "cvt":
            types = [m for m in mods if m in _TYPES]
            rnd = next((_RND[m] for m in mods if m in _RND), -1)
            sat = int("sat" in mods or "satfinite" in mods)
            relu = int("relu" in mods)
            ftz = int("ftz" in mods)
            if len(types) != 2:
                raise _Refused(head)
            dt, at = types
            if dt in ("f16x2", "bf16x2") and at == "f32" and len(args) == 3:
                code = _CVT_CODE[dt[:-2]]
                d, a, b = (self.reg(x) for x in args)
                conv = f"::cn::cuda::ptx_cvt<{code}, 11>"
                tail = f", {max(rnd, 0)}, {sat}, {relu}, {ftz})"
                return f"{d} = ({conv}({a}{tail} << 16) | {conv}({b}{tail};"
            if dt not in _CVT_CODE or at not in _CVT_CODE or len(args) != 2:
                raise _Refused(head)
            d, a = (self.reg(x) for x in args)
            return (f"{d} = ::cn::cuda::ptx_cvt<{_CVT_CODE[dt]}, {_CVT_CODE[at]}>({a}, {rnd}, "
                    f"{sat}, {relu}, {ftz});")
        if op == "prmt":
            mode = next((m for m in mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), "")
            code = ["", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"].index(mode)
            d, a, b, c = (self.reg(x) for x in args)
            return f"{d} = ::cn::cuda::ptx_prmt({a}, {b}, {c}, {code});"
        if op == "lop3":
            d, a, b, c, lut = (self.reg(x) for x in args)
            return f"{d} = ::cn::cuda::ptx_lop3({a}, {b}, {c}, {lut});"
        if op == "bfe":
            signed = "s32" in mods or "s64" in mods
            bits = 64 if ("u64" in mods or "s64" in mods) else 32
            d, a, b, c = (self.reg(x) for x in args)
            return f"{d} = ::cn::cuda::ptx_bfe<{bits}, {str(signed).lower()}>({a}, {b}, {c});"
        if op == "bfind":
            signed = "s32" in mods or "s64" in mods
            bits = 64 if ("u64" in mods or "s64" in mods) else 32
            d, a = (self.reg(x) for x in args)
            shift = str("shiftamt" in mods).lower()
            return f"{d} = ::cn::cuda::ptx_bfind<{bits}, {str(signed).lower()}, {shift}>({a});"
        if op == "vabsdiff4" and "add" in mods and len(args) == 4:
            signed = str(mods[0] == "s32").lower()
            d, a, b, c = (self.reg(x) for x in args)
            return f"{d} = ::cn::cuda::ptx_vabsdiff4_add<{signed}>({a}, {b}, {c});"
        if op in ("membar", "fence"):
            if any(m.startswith("proxy") for m in mods):
                raise _Refused(head)
            return "__threadfence();"
        if op == "bar" and mods[:1] in (["sync"], []) and len(args) == 1:
            return "__syncthreads();"
        raise _Refused(head)


def _args(rest: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in rest:
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _block(template: str, ops: list[_Operand]) -> str:
    tr = _Translator(ops)
    text = template.replace("%%", "%")
    body = []
    for ins in re.split(r"[;\n]", text):
        ins = ins.strip()
        if ins.startswith("//") or not ins:
            continue
        body.append(tr.instruction(ins))
    pre, post = [], []
    for i, o in enumerate(ops):
        ctype, _ = _REG.get(o.constraint, ("uint64_t", 64))
        if o.output and not o.inout:
            pre.append(f"{ctype} cn_r{i} = 0;")
        else:
            pre.append(f"{ctype} cn_r{i} = ::cn::cuda::ptx_in<'{o.constraint}'>({o.expr});")
        if o.output:
            post.append(f"::cn::cuda::ptx_out<'{o.constraint}'>({o.expr}, cn_r{i});")
    return "{ " + " ".join(pre + body + post) + " }"


def rewrite_asm(text: str, prefix: str) -> str:
    """``text`` with its supported ``asm`` statements as C++; NotImplementedError (naming the
    instruction) for the others."""
    if "asm" not in text:
        return text
    sig = [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]
    edits = []
    for k, t in enumerate(sig):
        if t.kind != "ident" or t.text not in ("asm", "__asm__", "__asm"):
            continue
        try:
            found = _statement(sig, k)
            if found is None:
                continue
            end, template, ops = found
            block = _block(template, ops)
        except (_Refused, KeyError, ValueError, IndexError) as exc:
            what = str(exc) if isinstance(exc, _Refused) else "this asm statement"
            raise NotImplementedError(
                f"{prefix} uses inline PTX {what!r} (asm at line "
                f"{text.count(chr(10), 0, t.start) + 1}), which the CUDA emulator (emu-cuda) does "
                "not support (it runs mov of special registers, shfl.sync, ld/st, cvt, prmt, "
                "lop3, bfe, bfind, vabsdiff4.add, membar/fence and bar.sync); run this kernel on a GPU "
                "(engine='cupy')"
            ) from None
        stop = sig[end].start + len(sig[end].text)
        edits.append((t.start, stop, block + "\n" * text.count("\n", t.start, stop)))
    return apply_edits(text, edits)
