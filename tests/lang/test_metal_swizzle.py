"""Swizzle chains (``v.xyz.zy``) spelled as one swizzle, for both Metal rewriters."""

from __future__ import annotations

import pytest

from cunumpy._lang.metal_swizzle import swizzle_chain_edits
from cunumpy._lang.tokens import tokenize


def _apply(text: str) -> str:
    sig = [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]
    out, pos = [], 0
    for start, stop, new in sorted(swizzle_chain_edits(sig, text)):
        out += [text[pos:start], new]
        pos = stop
    return "".join(out) + text[pos:]


@pytest.mark.parametrize(("before", "after"), [
    ("v.xy.yx", "v.yx"),
    ("v.xyz.zy", "v.zy"),
    ("c.rgb.r", "c.r"),
    ("v.wzyx.xy", "v.wz"),
    ("v.wzyx.xy.y", "v.z"),
    ("c.bgra.rgb.b", "c.r"),
    ("v.xx.y", "v.x"),
    ("v.yx.xyxy", "v.yxyx"),
    ("p->zyx.x", "p->z"),
    ("a[i].xyz.zyx + b.zw.yx", "a[i].zyx + b.wz"),
    ("s.pos.xy.yx", "s.pos.yx"),  # a struct member, then a chain
])
def test_chains_compose(before, after):
    assert _apply(before) == after


@pytest.mark.parametrize("text", [
    "v.xy", "v.x.y", "v.xy.z", "v.xy.rgb_", "s.pos.x", "v.xr.x", "1.5f.x", "v.xyzwx.x",
    "// v.xy.yx\n", '"v.xy.yx"',
])
def test_other_text_is_left_alone(text):
    assert _apply(text) == text


def test_newlines_in_a_chain_are_kept():
    assert _apply("v.xyz /* c */\n  .zy") == "v.zy\n"
