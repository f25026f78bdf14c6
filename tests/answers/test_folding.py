"""``fold``: lower case, character for character, that lower-case patterns search as the
original patterns ignoring case would."""

from __future__ import annotations

import re
import string

from shadowdiff.answers.folding import fold


def test_folding_keeps_every_characters_place_word_ness_and_case_ignoring_match() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    folded = fold(every)
    assert len(folded) == len(every)
    word = re.compile(r"\w+")
    assert [m.span() for m in word.finditer(folded)] == [m.span() for m in word.finditer(every)]
    for letter in string.ascii_lowercase:
        ignoring = [m.start() for m in re.finditer(letter, every, re.IGNORECASE)]
        assert [m.start() for m in re.finditer(letter, folded)] == ignoring, letter
