"""The reports' Terms: one entry a word, every outcome and headline figure explained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shadowdiff.report import glossary, headline
from shadowdiff.vocabulary import Outcome


def test_every_outcome_and_figure_has_an_entry_and_each_entry_one_anchor() -> None:
    anchors = [t.anchor for t in glossary.terms()]
    assert len(anchors) == len(set(anchors))
    assert all(re.fullmatch(r"[a-z][a-z-]*", a) for a in anchors)
    assert {o.value for o in Outcome} <= set(anchors)            # the template links each outcome to its entry
    assert set(glossary.FIGURE_TERMS.values()) <= set(anchors)
    # every figure the headline can show has its entry (a new figure without one fails here)
    keys = set(re.findall(r'Figure\("([a-z-]+)"', Path(headline.__file__).read_text(encoding="utf-8")))
    assert keys and keys <= set(glossary.FIGURE_TERMS), keys - set(glossary.FIGURE_TERMS)


def test_a_link_carries_the_meaning_escaped_and_an_unknown_term_is_an_error() -> None:
    link = glossary.link("margin")
    assert link.startswith('<a class="term" href="#term-margin" title="At the first divergent token')
    assert "<" not in link[1:link.index(">")].replace('class="term"', "")   # (no markup in the title)
    with pytest.raises(KeyError):
        glossary.link("no-such-term")
