"""Generate ``src/cunumpy/emulation/runtime/cn_metal_types.h``.

The header gives a Metal Shading Language kernel body, compiled as C++17, the scalar types, vector
types (with swizzles), math and integer functions, and MLX preamble utilities it expects. Most of
the text is written out below; the script only generates the repetitive swizzle member lists.
The generated header is committed; nothing runs this script at build time.

Usage::

    python tools/gen_metal_types.py          # rewrite the header
    python tools/gen_metal_types.py --check  # exit 1 if the committed header is stale
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "src" / "cunumpy" / "emulation" / "runtime" / "cn_metal_types.h"

XYZW = "xyzw"
RGBA = "rgba"


def swizzle_members(n: int) -> str:
    """Union members for every swizzle of length 2..4 over the first ``n`` components."""
    storage = 4 if n == 3 else n
    lines = []
    for length in (2, 3, 4):
        for combo in itertools.product(range(n), repeat=length):
            names = "".join(XYZW[i] for i in combo), "".join(RGBA[i] for i in combo)
            idx = ",".join(str(i) for i in combo)
            lines.append(f"    swz<T,{storage},{idx}> {names[0]}, {names[1]};")
    return "\n".join(lines)


def component_members(n: int) -> str:
    xs = ", ".join(XYZW[:n])
    rs = ", ".join(RGBA[:n])
    return f"    struct {{ T {xs}; }};\n    struct {{ T {rs}; }};"


def vec_specialization(n: int) -> str:
    storage = 4 if n == 3 else n
    return f"""
template <class T>
struct alignas(sizeof(T) * {storage}) vec<T, {n}> {{
  static constexpr int size = {n};
  static constexpr int storage = {storage};
  using value_type = T;
  union {{
    T e[{storage}];
{component_members(n)}
{swizzle_members(n)}
  }};
  CN_VEC_COMMON({n})
}};
"""


def packed_specialization(n: int) -> str:
    return f"""
template <class T>
struct packed_vec<T, {n}> {{
  union {{
    T e[{n}];
{component_members(n)}
  }};
  CN_PACKED_COMMON({n})
}};
"""


def render() -> str:
    vecs = "".join(vec_specialization(n) for n in (2, 3, 4))
    packed = "".join(packed_specialization(n) for n in (2, 3, 4))
    return TEMPLATE.replace("@VEC_SPECIALIZATIONS@", vecs).replace(
        "@PACKED_SPECIALIZATIONS@", packed
    )


TEMPLATE = (Path(__file__).resolve().parent / "cn_metal_types.h.in").read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the header is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: run python tools/gen_metal_types.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
