"""The docs home page's install block fits the page: short lines, and shell blocks wrap."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Material's content column holds about 80 characters of code beside both sidebars.
FITS = 80


def test_home_page_shell_lines_fit_the_content_column():
    text = (ROOT / "docs" / "index.md").read_text()
    blocks = re.findall(r"^```bash[ \t]*\n(.*?)^```", text, re.M | re.S)
    assert blocks, "the home page shows how to install"
    long = [line for block in blocks for line in block.splitlines() if len(line) > FITS]
    assert not long, f"lines over {FITS} characters scroll sideways: {long}"


def test_shell_blocks_wrap_on_narrow_windows():
    config = (ROOT / "mkdocs.yml").read_text()
    assert "stylesheets/extra.css" in config
    assert "pygments_lang_class: true" in config  # gives blocks the class the CSS selects
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text()
    assert ".language-bash pre code" in css and "white-space: pre-wrap" in css
