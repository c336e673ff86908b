"""The one include scanner and search rule (front end and CUDA emulator share it)."""

from __future__ import annotations

from cunumpy._lang.includes import find_include, scan_includes


def test_scan_finds_both_quote_kinds_with_trailing_text():
    text = '#include "a.cuh" // mine\n  #  include <b.h>\nint x; // #include "c.h"\n'
    found = [(m.group(1), m.group(2)) for m in scan_includes(text)]
    assert found == [('"', "a.cuh"), ("<", "b.h")]


def test_quoted_searches_beside_the_file_first_angle_only_include_dirs(tmp_path):
    here, inc = tmp_path / "src", tmp_path / "inc"
    here.mkdir()
    inc.mkdir()
    (here / "h.cuh").write_text("// beside")
    (inc / "h.cuh").write_text("// in include_dirs")
    assert find_include("h.cuh", '"', here, [inc]) == (here / "h.cuh").resolve()
    assert find_include("h.cuh", "<", here, [inc]) == (inc / "h.cuh").resolve()
    assert find_include("h.cuh", "<", here, []) is None
    assert find_include("missing.h", '"', here, [inc]) is None
