"""The vocabulary is defined once (shadowdiff.vocabulary) and compared as members.

A stored or sent string (an outcome, a verdict, a reason a request made no pair) is
compared in the code as its enum member, never as a literal: a typo in a literal is a
comparison that is silently never true, a typo in a member an ``AttributeError``. This
reads every comparison in the package and fails on a literal that is one of the
vocabulary's words.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from shadowdiff import vocabulary

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "shadowdiff", ROOT / "proxy", ROOT / "replay")
# Migrations write the values of their time, as data: they must not follow later renames.
SKIPPED = ("migrations",)
WORDS = frozenset(
    member.value
    for enum in (vocabulary.Side, vocabulary.Outcome, vocabulary.Verdict, vocabulary.Standing, vocabulary.Tally,
                 vocabulary.NotCompared, vocabulary.NotMirrored)
    for member in enum
)


def _literals(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _literals(element)


def literal_comparisons(source: str) -> Iterator[tuple[int, str]]:
    """(line, word) for each comparison of a value with a literal vocabulary word: ``x ==
    "near"``, ``"near" != x``, ``x in ("near", "divergent")``. A literal on the left of
    ``in`` (``"error" in body``) asks about a container, not a value, and is left alone."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                candidates = [left, right]
            elif isinstance(op, ast.In | ast.NotIn):
                candidates = [right]
            else:
                continue
            for candidate in candidates:
                for word in _literals(candidate):
                    if word in WORDS:
                        yield node.lineno, word


def test_no_vocabulary_word_is_compared_as_a_literal() -> None:
    found = []
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            if path.is_relative_to(ROOT / "shadowdiff" / "simulator") or any(s in path.parts for s in SKIPPED):
                continue   # the simulator writes the wire's strings; it decides nothing with them
            found += [f"{path.relative_to(ROOT)}:{line}: {word!r}"
                      for line, word in literal_comparisons(path.read_text(encoding="utf-8"))]
    assert found == []


# In a template: a comparison with a quoted word, or a loop over a list of quoted words.
_TEMPLATE_LITERAL = re.compile(r"""(?:==|!=)\s*["'](\w+)["']|\bin\s*\[\s*["'](\w+)["']""")


def template_literals(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        for match in _TEMPLATE_LITERAL.finditer(line):
            word = match.group(1) or match.group(2)
            if word in WORDS:
                yield number, word


def test_no_template_compares_a_vocabulary_word_as_a_literal() -> None:
    """The templates get the enums (``Outcome``) and compare members too."""
    found = [f"{path.relative_to(ROOT)}:{line}: {word!r}"
             for path in sorted((ROOT / "shadowdiff").rglob("*"))
             if path.suffix in (".html", ".j2") and not path.is_relative_to(ROOT / "shadowdiff" / "simulator")
             for line, word in template_literals(path.read_text(encoding="utf-8"))]
    assert found == []
    assert list(template_literals('{% if o == "error" %}\n{% for o in ["near", "x"] %}{% if k == "key" %}')) == \
        [(1, "error"), (2, "near")]


def test_the_check_finds_what_it_looks_for() -> None:
    source = ('a == "near"\n"divergent" != b\nc in ("identical", "x")\n"error" in body\n'
              'd == Outcome.NEAR\ne in ("primary_failed",)\nf == "nearby"\n')
    assert list(literal_comparisons(source)) == [(1, "near"), (2, "divergent"), (3, "identical"),
                                                  (6, "primary_failed")]


def test_each_set_of_outcomes_holds_outcomes() -> None:
    for outcomes in (vocabulary.CHANGED, vocabulary.SUBSTANTIVE, vocabulary.ANSWERED, vocabulary.UNCOMPARED):
        assert all(isinstance(o, vocabulary.Outcome) for o in outcomes)
    assert set(vocabulary.ANSWERED) | set(vocabulary.UNCOMPARED) == set(vocabulary.Outcome)
    assert set(vocabulary.NOT_COMPARED_REASONS) == set(vocabulary.NotCompared)
    assert set(vocabulary.NOT_MIRRORED_REASONS) == set(vocabulary.NotMirrored)
    # the counts table's column holds 16 characters
    assert max(len(w) for w in (*vocabulary.NotCompared, *vocabulary.NotMirrored)) <= 16
