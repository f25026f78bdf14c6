"""``equivalent`` forgives only whitespace that carries no meaning.

A pair that is ``equivalent`` needs no review, so whitespace that changes what a text
says - indentation, anything inside a code block, a quoted or multi-line string or a
heredoc, the spaces of a diff line, a line break - must never be forgiven; prose layout
(runs of spaces, trailing spaces, blank lines between prose lines, CRLF, a trailing
newline, Unicode normalization) still is.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shadowdiff.answers.compare import answered, compare_answers, normalize
from shadowdiff.answers.records import Answer
from shadowdiff.replay.offline import compare_files
from shadowdiff.store import Store
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.vocabulary import Decision, Outcome, Side

SAME = (Outcome.IDENTICAL, Outcome.EQUIVALENT)

# The three attacks: each changes what the text means with whitespace alone.
LOOP = "```python\nfor x in xs:\n    total += x\nprint(total)\n```"
LOOP_INSIDE = "```python\nfor x in xs:\n    total += x\n    print(total)\n```"
BARE_LOOP, BARE_LOOP_INSIDE = (text.removeprefix("```python\n").removesuffix("\n```") for text in (LOOP, LOOP_INSIDE))
YAML = "server:\n  host: example.com\n  port: 8080\n  debug: false\nworkers: 4"
YAML_MOVED = "server:\n  host: example.com\n  port: 8080\ndebug: false\nworkers: 4"
STRING = 'Set the greeting to "Hello,  world" in config.yaml.'
STRING_COLLAPSED = 'Set the greeting to "Hello, world" in config.yaml.'
ATTACKS = {"loop": (LOOP, LOOP_INSIDE), "bare-loop": (BARE_LOOP, BARE_LOOP_INSIDE), "yaml": (YAML, YAML_MOVED),
           "string": (STRING, STRING_COLLAPSED)}
# Whitespace inside a multi-line string, a heredoc body or a diff line is part of its value.
BLOCK_ATTACKS = {
    "triple-quoted": ('x = """\nfoo  bar\n"""', 'x = """\nfoo bar\n"""'),
    "triple-single-quoted": ("x = '''\nfoo  bar\n'''", "x = '''\nfoo bar\n'''"),
    "string-trailing-space": ('x = """a  \nb"""', 'x = """a\nb"""'),
    "string-blank-line": ('x = """a\n\nb"""', 'x = """a\nb"""'),
    "heredoc": ("cat <<EOF\nfoo  bar\nEOF", "cat <<EOF\nfoo bar\nEOF"),
    "heredoc-dash": ("cat <<-EOF\nfoo  bar\n\tEOF", "cat <<-EOF\nfoo bar\n\tEOF"),
    "heredoc-quoted": ("cat <<'EOF'\nfoo  bar\nEOF", "cat <<'EOF'\nfoo bar\nEOF"),
    "heredoc-double-quoted": ('cat <<"EOF"\nfoo  bar\nEOF', 'cat <<"EOF"\nfoo bar\nEOF'),
    "heredoc-trailing-space": ("cat <<EOF > a.txt\nfoo  \nEOF", "cat <<EOF > a.txt\nfoo\nEOF"),
    "diff-removed": ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a  b\n+c", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a b\n+c"),
    "diff-added": ("@@ -1 +1 @@\n-c\n+a  b", "@@ -1 +1 @@\n-c\n+a b"),
    "diff-hunk": ("@@ -1,2  +1,2 @@\n a", "@@ -1,2 +1,2 @@\n a"),
}


def answer(text: str, side: Side = Side.BASELINE, **parts: Any) -> Answer:
    return Answer(side, "m", text, parts.pop("finish_reason", "stop"), 10, 20, **parts)


def outcome(a: str, b: str) -> Outcome:
    return compare_answers(answer(a), answer(b, Side.CANDIDATE)).outcome


def test_whitespace_that_changes_the_meaning_is_a_change() -> None:
    for name, (a, b) in ATTACKS.items():
        assert outcome(a, b) is Outcome.NEAR, name
        assert outcome(b, a) is Outcome.NEAR, name


def test_whitespace_inside_a_string_a_heredoc_or_a_diff_line_is_a_change() -> None:
    for name, (a, b) in BLOCK_ATTACKS.items():
        assert outcome(a, b) not in SAME, name
        assert outcome(b, a) not in SAME, name


def test_a_block_ends_where_it_closes() -> None:
    """After a string's closing quotes or a heredoc's closing word, prose is forgiven again."""
    assert outcome('x = """a\n  b"""\nso  it  is', 'x = """a\n  b"""\nso it is') is Outcome.EQUIVALENT
    assert outcome("cat <<EOF\na\nEOF\nso  it  is  ", "cat <<EOF\na\nEOF\nso it is") is Outcome.EQUIVALENT
    assert outcome("cat <<-EOF\na\n\t\tEOF\nso  it", "cat <<-EOF\na\n\t\tEOF\nso it") is Outcome.EQUIVALENT
    # Without <<-, an indented word does not close it.
    assert outcome("cat <<EOF\n  EOF\nso  it\nEOF", "cat <<EOF\n  EOF\nso it\nEOF") not in SAME
    # A list item and a here-string are prose.
    assert outcome("- a  b\n-  c", "- a b\n-  c") is Outcome.EQUIVALENT
    assert outcome("cat <<<word\nso  it", "cat <<<word\nso it") is Outcome.EQUIVALENT


def test_a_markdown_hard_break_is_forgiven() -> None:
    """Two trailing spaces break a markdown line: layout only, the words are the same."""
    assert outcome("first line  \nsecond line", "first line\nsecond line") is Outcome.EQUIVALENT


def test_the_stored_outcome_needs_a_review(tmp_path: Path) -> None:
    """``shadowdiff compare`` stores the attacks as changed in substance, so the run is
    not PASS until someone has looked at them."""
    def saved(name: str, index: int) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": key, "text": texts[index]}) + "\n" for key, texts in ATTACKS.items()))
        return path

    store = Store.open(tmp_path / "store")
    try:
        run_id, stored, _ = compare_files(saved("baseline", 0), saved("candidate", 1), store)
        assert stored == len(ATTACKS)
        assert {p["key"]: p["outcome"] for p in store.pairs(run_id)} == dict.fromkeys(ATTACKS, "near")
        verdict = acceptance(store, run_id)
        assert verdict.decision is Decision.INCOMPLETE and verdict.unreviewed == len(ATTACKS)
    finally:
        store.close()


def test_whitespace_inside_a_tool_call_string_counts() -> None:
    """Arguments compare as canonical JSON: the spacing between tokens is forgiven, the
    characters of a string value are not."""
    def called(arguments: str, side: Side = Side.BASELINE) -> Answer:
        call = {"id": "c", "type": "function", "function": {"name": "search", "arguments": arguments}}
        return answer("", side, tool_calls=[call], finish_reason="tool_calls")

    base = called('{"query": "a  b", "limit": 2}')
    assert compare_answers(base, called('{"query":"a  b",  "limit":2}', Side.CANDIDATE)).outcome is Outcome.EQUIVALENT
    assert compare_answers(base, called('{"query": "a b", "limit": 2}', Side.CANDIDATE)).outcome not in SAME
    assert compare_answers(base, called('{"query": "a\\tb", "limit": 2}', Side.CANDIDATE)).outcome not in SAME


# -- properties ---------------------------------------------------------------------------

# Texts rich in what the rule reads: whitespace of every kind, fences, quotes, list markers.
ANY_TEXT = st.text(st.sampled_from(list(" \t\n\r\u00a0\u2028`~'\"-*>1.:ab#é\u0301<+@")) | st.characters(), max_size=120)
# Text that opens no code block (a fence before the line under test would change what it is).
NO_FENCE = st.text(st.characters(blacklist_characters="`~"), max_size=80)
INDENT = st.text(st.sampled_from([" ", "\t"]), min_size=1, max_size=6)
WHITESPACE_RUN = st.text(st.sampled_from([" ", "\t"]), min_size=1, max_size=4)
# A line's content: something first that is not whitespace, no line break.
CONTENT = st.text(st.characters(blacklist_characters="\n\r"), min_size=1, max_size=30) \
    .filter(lambda s: not s[0].isspace())
IN_QUOTES = st.text(st.characters(blacklist_characters="\n\r\"'`"), max_size=10)
WORD = st.text(st.sampled_from(list("abcdefghijklmnopqrstuvwxyzé,.;:!?()0123456789")), min_size=1, max_size=8) \
    .filter(lambda w: w[0].isalpha())


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, INDENT, st.text(st.sampled_from([" ", "\t"]), max_size=6), CONTENT, ANY_TEXT)
@example("", "    ", "", "print(x)", "")                    # un-indented: out of the loop
@example("server:", "  ", "", "debug: true", "workers: 4")  # a YAML key moved out of its parent
def test_changing_an_indentation_is_never_equivalent(before: str, indent: str, other: str, content: str,
                                                     after: str) -> None:
    if indent == other:
        other = indent + " "
    a = f"{before}\n{indent}{content}\n{after}"
    b = f"{before}\n{other}{content}\n{after}"
    assert outcome(a, b) not in SAME


@settings(max_examples=300, deadline=None)
@given(NO_FENCE, st.sampled_from([("```", "```"), ("~~~", "~~~"), ("````", "`````"), ("```python", "```")]),
       st.lists(st.text(st.characters(blacklist_characters="\n\r`~"), max_size=20),
                min_size=1, max_size=6),
       st.data(), NO_FENCE)
@example('"', ("```", "```"), ["", "", '"', ""], None, "")              # a quote left open before the block
@example('x = """', ("```", "```"), ['"""', ""], None, "")               # a string whose end is inside it
@example("cat <<EOF", ("~~~", "~~~"), ["EOF", ""], None, "")             # a heredoc whose word is inside it
@example("<pre>", ("```", "```"), ["</pre>", ""], None, "")              # preformatted HTML closed inside it
def test_changing_whitespace_inside_a_code_block_is_never_equivalent(
        before: str, fences: tuple[str, str], code: list[str], data: st.DataObject | None, after: str) -> None:
    changed = list(code)
    if data is None:   # an explicit example: a blank line added at the block's end
        changed.append("")
    else:
        _change_a_line(changed, data)

    def block(lines: list[str]) -> str:
        return "\n".join([before, fences[0], *lines, fences[1], after])

    assert outcome(block(code), block(changed)) not in SAME


def _change_a_line(changed: list[str], data: st.DataObject) -> None:
    code = list(changed)
    line = data.draw(st.integers(0, len(code) - 1))
    if data.draw(st.booleans()):
        changed.insert(line, data.draw(st.text(st.sampled_from([" ", "\t"]), max_size=3)))   # a blank line
    else:
        at = data.draw(st.integers(0, len(code[line])))
        changed[line] = code[line][:at] + data.draw(WHITESPACE_RUN) + code[line][at:]


@settings(max_examples=300, deadline=None)
@given(NO_FENCE, CONTENT.filter(lambda s: not any(q in s for q in "\"'`~")), st.sampled_from(list("\"'`")),
       IN_QUOTES, WHITESPACE_RUN, WHITESPACE_RUN, IN_QUOTES)
@example("", "greeting: ", '"', "Hello,", "  ", " ", "world")
def test_changing_whitespace_inside_a_quoted_string_is_never_equivalent(
        before: str, head: str, quote: str, left: str, run: str, other: str, right: str) -> None:
    if run == other:
        other = run + " "
    a = f"{before}\n{head}{quote}{left}{run}{right}{quote} and so on\n"
    b = f"{before}\n{head}{quote}{left}{other}{right}{quote} and so on\n"
    assert outcome(a, b) not in SAME


# Text that opens no block of any kind: no fence, triple quote or heredoc.
NO_BLOCK = st.text(st.characters(blacklist_characters="`~\"'<"), max_size=80)
# A block's first and last lines: multi-line strings, then heredocs.
BLOCKS = [('x = """', '"""'), ("s = '''", "'''.strip()"), ('"""Docstring.', '"""'),
          ("cat <<EOF", "EOF"), ("cat <<-EOF > out.txt", "\t\tEOF"), ("sh <<'END'", "END"), ('cat <<"EOF"', "EOF")]
BODY_LINE = st.text(st.characters(blacklist_characters="\n\r\"'"), max_size=20) \
    .filter(lambda s: s.strip() not in ("EOF", "END"))


@settings(max_examples=300, deadline=None)
@given(NO_BLOCK, st.sampled_from(BLOCKS), st.lists(BODY_LINE, min_size=1, max_size=6), st.data(), NO_BLOCK)
@example("", ('x = """', '"""'), ["a", "b"], None, "")
def test_changing_whitespace_inside_a_string_or_a_heredoc_is_never_equivalent(
        before: str, ends: tuple[str, str], body: list[str], data: st.DataObject | None, after: str) -> None:
    """Inside a multi-line string or a heredoc body every whitespace character is the
    value's: a run changed, a trailing space or a blank line added is a change."""
    changed = list(body)
    if data is None:
        changed[0] += "  "   # a trailing space inside an open string
    elif data.draw(st.booleans()):
        blank = data.draw(st.text(st.sampled_from([" ", "\t"]), max_size=3))
        changed.insert(data.draw(st.integers(0, len(body))), blank)
    else:
        line = data.draw(st.integers(0, len(body) - 1))
        at = data.draw(st.integers(0, len(body[line])))
        changed[line] = body[line][:at] + data.draw(WHITESPACE_RUN) + body[line][at:]

    def block(lines: list[str]) -> str:
        return "\n".join([before, ends[0], *lines, ends[1], after])

    assert outcome(block(body), block(changed)) not in SAME


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, st.sampled_from(["-", "+", "@@ -1,2 +1,2 @@", "@@"]), CONTENT, WHITESPACE_RUN, WHITESPACE_RUN,
       CONTENT, ANY_TEXT)
@example("--- a/x\n+++ b/x\n@@ -1 +1 @@", "-", "a", "  ", " ", "b", "+c")
def test_changing_whitespace_inside_a_diff_line_is_never_equivalent(
        before: str, sign: str, head: str, run: str, other: str, tail: str, after: str) -> None:
    """A removed or added line of a diff, or a hunk header, keeps its spaces: they are the file's."""
    if run == other:
        other = run + " "
    a = f"{before}\n{sign}{head}{run}{tail}\n{after}"
    b = f"{before}\n{sign}{head}{other}{tail}\n{after}"
    assert outcome(a, b) not in SAME


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(WORD, min_size=1, max_size=8), min_size=1, max_size=6), st.data())
def test_prose_layout_is_equivalent(lines: list[list[str]], data: st.DataObject) -> None:
    """Prose lines (not indented, no quote, no code): runs of plain spaces, trailing spaces,
    blank lines, CRLF and a trailing newline are forgiven."""
    plain = "\n".join(" ".join(words) for words in lines)
    spaced = [data.draw(st.sampled_from(["", "\n", "\n \n", "  \n\n"])) for _ in range(data.draw(st.integers(0, 2)))]
    for words in lines:
        gaps = [data.draw(st.sampled_from([" ", "  ", "    "])) for _ in words[1:]]
        text = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:], strict=True))
        trailing = data.draw(st.sampled_from(["", " ", "   "]))
        ending = data.draw(st.sampled_from(["\n", "\r\n", "\n\n", "\r\n \r\n"]))
        spaced.append(text + trailing + ending)
    assert outcome(plain, "".join(spaced)) in SAME


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT.filter(lambda t: answered(answer(t).choices)),
       st.text(st.sampled_from([" ", "\t", "\n", "\r"]), max_size=5))
def test_unicode_normalization_and_the_end_of_the_text_are_forgiven(text: str, end: str) -> None:
    """Over texts that are answers: one of format characters only (a soft hyphen) is none."""
    assert outcome(text, unicodedata.normalize("NFD", text) + end) in SAME


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_normalizing_twice_changes_nothing(text: str) -> None:
    """The normal form is a fixed point: ``equivalent`` is a true equivalence (a normalized
    text is equivalent to the text it came from)."""
    assert normalize(normalize(text)) == normalize(text)


# Whitespace a review found forgiven though it is part of the value: a tab, a no-break or
# em space, a template literal or a double-quoted string spanning lines, preformatted HTML.
LATER_ATTACKS = {
    "template-literal": ("const banner = `\nID0    NAME\n`;", "const banner = `\nID0 NAME\n`;"),
    "tsv": ("id\tname\n1\tapples", "id name\n1 apples"),
    "tab-in-a-run": ("a \t b", "a b"),
    "pre": ("<pre>\n0  apples\n</pre>", "<pre>\n0 apples\n</pre>"),
    "pre-one-line": ("<pre>0  apples</pre>", "<pre>0 apples</pre>"),
    "code": ("<code>\nx  = 1\n</code>", "<code>\nx = 1\n</code>"),
    "textarea": ('<TEXTAREA rows="2">\na  b\n</TEXTAREA>', '<TEXTAREA rows="2">\na b\n</TEXTAREA>'),
    "cpp-raw-string": ('auto s = R"(\na  b\n)";', 'auto s = R"(\na b\n)";'),
    "rust-raw-string": ('let s = r#"\na  b\n"#;', 'let s = r#"\na b\n"#;'),
    "open-double-quote": ('say "hello\nthere  world"', 'say "hello\nthere world"'),
    "nbsp": ("100\u00a0km", "100 km"),
    "em-space": ("a\u2003b", "a b"),
    "trailing-tab": ("id\tname\t\nx", "id\tname\nx"),
}


def test_whitespace_that_is_part_of_the_value_is_a_change() -> None:
    for name, (a, b) in LATER_ATTACKS.items():
        assert outcome(a, b) not in SAME, name
        assert outcome(b, a) not in SAME, name


def test_prose_after_a_closed_block_is_forgiven_again() -> None:
    """A template literal, a string or a <pre> closed, the prose after it is prose; an
    apostrophe opens nothing."""
    assert outcome("x = `a\nb`;\nso  it  is", "x = `a\nb`;\nso it is") is Outcome.EQUIVALENT
    assert outcome('x = "a\nb";\nso  it  is', 'x = "a\nb";\nso it is') is Outcome.EQUIVALENT
    assert outcome("<pre>\na\n</pre>\nso  it  is", "<pre>\na\n</pre>\nso it is") is Outcome.EQUIVALENT
    assert outcome("Don't  panic.\nSo  it  is.", "Don't  panic.\nSo it is.") is Outcome.EQUIVALENT


# Whitespace that is not a plain space: each draws or parses differently from one.
OTHER_SPACE = st.sampled_from(["\t", "\u00a0", "\u2003", "\u2009", "\u202f", "\u3000", "\x0b", "\x0c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(WORD, min_size=1, max_size=6), min_size=1, max_size=4), st.data(), OTHER_SPACE)
@example([["id", "name"]], None, "\t")
def test_a_space_replaced_by_other_whitespace_is_never_equivalent(
        lines: list[list[str]], data: st.DataObject | None, other: str) -> None:
    """Between two words of any line, or at its end before more text, a tab, a no-break
    space or any other whitespace character in place of a plain space is a change."""
    text = "\n".join(" ".join(words) + " " for words in lines) + "end"
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    at = spaces[0] if data is None else data.draw(st.sampled_from(spaces))
    assert outcome(text, text[:at] + other + text[at + 1:]) not in SAME
