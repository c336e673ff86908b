"""The one tokenizer for CUDA C++ and Metal Shading Language text.

Every reader of kernel text (signature parsing, preprocessor evaluation, feature scans, both
rewriters) reads tokens from :func:`tokenize`, so they agree on comments, preprocessor lines,
string and character literals (raw strings included), digit separators (``1'024``) and line
continuations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EXPRESSION_WORDS", "Token", "tokenize"]

_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<pp>^[ \t]*\#(?:[^\n\\]|\\.)*)
  | (?P<string>(?:u8|u|U|L)?R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"
              |(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<ws>\n|[^\S\n]+)
  | (?P<punct>::|->|<<=|>>=|\+\+|--|&&|\|\||[<>=!+\-*/%&|^]=|.)
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Token:
    """One lexical token: its kind, text and offset in the source."""

    kind: str
    text: str
    start: int


EXPRESSION_WORDS = frozenset({"return", "case", "else", "do", "co_return", "throw"})
"""Keywords after which an expression starts: a ``[`` there is no subscript of them."""


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, whitespace and comments included."""
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "delim":  # the raw-string delimiter group is inside "string"
            kind = "string"
        out.append(Token(kind or "punct", m.group(), m.start()))
    return out
