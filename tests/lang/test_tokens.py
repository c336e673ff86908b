"""The one tokenizer of kernel text, and the readers built on it agreeing with it."""

from __future__ import annotations

from cunumpy._lang.cuda_signature import parse_signature, strip_comments
from cunumpy._lang.tokens import tokenize


def test_tokens_cover_the_text_and_keep_offsets():
    text = 'int a = 1\'024; // c\n#define X 1\nconst char* s = "a\\"b"; /* x */ float f = .5e-3f;'
    tokens = tokenize(text)
    assert "".join(t.text for t in tokens) == text
    for tok in tokens:
        assert text[tok.start:tok.start + len(tok.text)] == tok.text
    kinds = {t.text: t.kind for t in tokens}
    assert kinds["1'024"] == "number"
    assert kinds["// c"] == "comment"
    assert kinds["#define X 1"] == "pp"
    assert kinds['"a\\"b"'] == "string"
    assert kinds[".5e-3f"] == "number"


def test_raw_strings_and_line_continuations():
    text = 'auto s = R"x(a "quoted" )" b)x";\n#define LONG a \\\n  b\nint z;'
    kinds = [(t.kind, t.text) for t in tokenize(text) if t.kind not in ("ws",)]
    assert ("string", 'R"x(a "quoted" )" b)x"') in kinds
    assert ("pp", "#define LONG a \\\n  b") in kinds
    assert ("ident", "z") in kinds


def test_digit_separator_on_the_kernel_line_does_not_hide_the_kernel():
    # A lone ' in 1'024 once opened a character literal for the signature reader.
    source = "constexpr int N = 1'024; __global__ void k(float* x) { x[0] = N; }"
    sig = parse_signature(source, "k")
    assert [p.name for p in sig.params] == ["x"]


def test_strip_comments_keeps_offsets_and_quotes():
    source = 'extern "C" /* c */ __global__ void k(int n) {} // tail\n'
    clean = strip_comments(source)
    assert len(clean) == len(source)
    assert clean.startswith('extern " "')  # quotes kept, contents blanked
    assert "c */" not in clean and "tail" not in clean
    assert clean.index("__global__") == source.index("__global__")
