from __future__ import annotations

from cunumpy._lang.edits import apply_edits


def test_edits_apply_in_offset_order_whatever_their_order() -> None:
    assert apply_edits("abcdef", [(4, 5, "E"), (0, 1, "A")]) == "AbcdEf"


def test_the_widest_edit_at_one_offset_wins_and_covers_those_inside() -> None:
    text = "keep drop(this) keep"
    edits = [(5, 9, "X"), (5, 15, ""), (10, 14, "that")]
    assert apply_edits(text, edits) == "keep  keep"


def test_insertions_at_one_offset_keep_their_order() -> None:
    assert apply_edits("ab", [(1, 1, "1"), (1, 1, "2")]) == "a12b"


def test_no_edits_give_the_text() -> None:
    assert apply_edits("same", []) == "same"


def test_an_insertion_at_a_replacement_s_start_comes_before_it() -> None:
    assert apply_edits("constant x", [(0, 8, "const"), (0, 0, "__constant__ ")]) \
        == "__constant__ const x"
