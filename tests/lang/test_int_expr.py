"""Integer constant expressions of Metal attributes (``max_total_threads_per_threadgroup``)."""

from __future__ import annotations

import pytest

from cunumpy._lang.int_expr import c_int, int_expression


@pytest.mark.parametrize("text, value", [
    ("1024", 1024), ("4 * 1 * 32", 128), ("2*2*32", 128), ("1 << 8", 256), ("256 >> 1", 128),
    ("(2 + 3) * 4u", 20), ("0x100", 256), ("010", 8), ("7 / 2", 3), ("-7 / 2", -3),
    ("-7 % 2", -1), ("3 | 4 ^ 1 & 1", 7),
])
def test_values_as_c_computes_them(text, value):
    assert int_expression(text) == value


@pytest.mark.parametrize("text", ["WM * 32", "", "1 << 99", "4 / 0", "1 < 2", "(1 + 2", "1.5"])
def test_anything_else_is_none(text):
    assert int_expression(text) is None


def test_c_literals():
    assert c_int("0b101") == 5 and c_int("1'024") == 1024 and c_int("64ul") == 64
