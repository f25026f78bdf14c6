"""The invisible characters' ranges written into ``shadowdiff.answers.invisible`` are the ones
a scan of this Python's Unicode finds, and the pattern built from them escapes each of them."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from shadowdiff.answers import invisible


@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0", reason="the table is Unicode 14.0's (Python 3.11)")
def test_the_table_is_what_a_scan_of_unicode_finds() -> None:
    assert invisible.scan() == list(invisible.UNICODE_14)


def test_every_character_the_scan_finds_is_escaped_and_no_other() -> None:
    found = {code for first, last in invisible.scan() for code in range(first, last + 1)}
    # each invisible character, and its neighbours on either side (visible unless invisible too)
    for code in sorted(found | {c + d for c in found for d in (-1, 1) if 0 <= c + d <= sys.maxunicode}):
        ch = chr(code)
        escaped = invisible.safe_text(f"a{ch}b", lines=True) != f"a{ch}b"
        assert escaped == (code in found and ch not in "\n\t"), hex(code)


def test_another_unicode_is_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unicodedata, "unidata_version", "0.0")
    monkeypatch.setattr(invisible, "UNICODE_14", ())   # a table that would escape nothing, were it used
    invisible._ranges.cache_clear()
    invisible._pattern.cache_clear()
    try:
        assert invisible.safe_text("total \u202e24\u202c") == "total \\u202e24\\u202c"
    finally:
        invisible._ranges.cache_clear()
        invisible._pattern.cache_clear()
