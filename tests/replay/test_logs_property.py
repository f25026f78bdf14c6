"""The log readers over random logs.

* Valid records read as written whatever frames them: spaces and tabs around a JSON
  line, blank lines, LF, CRLF or CR line ends, a byte-order mark at the start of the
  file or of a line (logs concatenated with ``cat``), and in the line they are on.
* A random or mutated line is a ``BadLine`` with its number and a reason, and the good
  lines around it are still read; any file at all is read or refused with an
  ``InputError``, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shadowdiff.errors import InputError
from shadowdiff.replay.logs import CHAT, COMPLETIONS, BadLine, LogFormat, LogRecord, count, detect, read

TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30).filter(str.strip)
SPACE = st.text(" \t", max_size=3)
ENDS = ("\n", "\r\n", "\r")
BOM = "\ufeff"
_LINE_ENDS = re.compile(r"\r\n|\r|\n")
too_deep = "[" * 100_000   # a line nested deeper than the json module reads


@st.composite
def records(draw: st.DrawFn, fmt: LogFormat, number: int) -> tuple[dict[str, Any], LogRecord]:
    """A record's JSON and what reading it on line ``number`` must give."""
    messages = [{"role": "user", "content": draw(TEXT)}]
    category = draw(st.none() | TEXT)
    if fmt is LogFormat.BATCH:
        chat = draw(st.booleans())
        body: dict[str, Any] = {"model": "m", **({"messages": messages} if chat else {"prompt": draw(TEXT)})}
        key = draw(TEXT)
        value = {"custom_id": key, "method": "POST", "url": CHAT if chat else COMPLETIONS, "body": body,
                 **({"metadata": {"category": category}} if category is not None else {})}
        return value, LogRecord(key, number, CHAT if chat else COMPLETIONS, body, category)
    if fmt is LogFormat.BODIES:
        key = draw(st.none() | TEXT)
        value = {"messages": messages, "max_tokens": draw(st.integers(1, 99)),
                 **({"id": key} if key is not None else {}), **({"category": category} if category else {})}
        body = {k: v for k, v in value.items() if k not in ("id", "category")}
        return value, LogRecord(key if key is not None else f"line-{number}", number, CHAT, body, category)
    turns = draw(st.lists(TEXT, min_size=1, max_size=3))
    value = {"question_id": draw(st.integers(0, 999)), "turns": turns, "category": category}
    return value, LogRecord(str(value["question_id"]), number, CHAT, {"messages": [
        {"role": "user", "content": turns[0]}]}, category)


@st.composite
def logs(draw: st.DrawFn, fmt: LogFormat, bad: bool) -> tuple[str, list[LogRecord | BadLine | int]]:
    """A log in ``fmt`` and, line by line, the record it must give (or, for a bad line,
    a ``BadLine``; for a random line, its number: either is right)."""
    text, expected = draw(st.sampled_from(["", BOM])), []
    for number in range(1, draw(st.integers(1, 8)) + 1):
        kind = draw(st.sampled_from(["record", "blank", "bad", "random"] if bad else ["record", "blank"]))
        if kind == "record":
            value, record = draw(records(fmt, number))
            line = draw(SPACE) + json.dumps(value, ensure_ascii=draw(st.booleans())) + draw(SPACE)
            line = draw(st.sampled_from(["", BOM])) + line
            expected.append(record)
        elif kind == "blank":
            line = draw(SPACE)
        elif kind == "bad":
            line = draw(st.sampled_from(['{"custom_id": "a"', "[1, 2]", '"a string"', "{}", "not json", "{,}",
                                         '{"messages": []}', '{"turns": []}', '{"body": 3, "custom_id": 1}',
                                         "{" + '"a":' * 5000 + "1" + "}" * 5000, too_deep]))
            expected.append(BadLine(number, ""))
        else:
            line = draw(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=40))
            # (first in the file, a line's leading byte-order mark is the file's: "\ufeff" alone is blank)
            if (line if text else line.removeprefix(BOM)).strip():
                expected.append(number)
        # after a CR, a line that is empty and ends in LF would make one CRLF with it
        ends = ENDS if line or not text.endswith("\r") else ("\r",)
        text += line + draw(st.sampled_from(ends))
    return text, expected


def check(got: list[LogRecord | BadLine], expected: list[LogRecord | BadLine | int]) -> None:
    assert len(got) == len(expected), got
    for item, wanted in zip(got, expected, strict=True):
        if isinstance(wanted, int):
            assert item.line == wanted
        elif isinstance(wanted, BadLine):
            assert isinstance(item, BadLine) and item.line == wanted.line and item.reason, item
        else:
            assert item == wanted
        if isinstance(item, BadLine):
            assert item.reason and "\n" not in item.reason and len(item.reason) < 500, item


JSON_FORMATS = [LogFormat.BATCH, LogFormat.BODIES, LogFormat.QUESTIONS]


@pytest.mark.parametrize("bad", [False, True], ids=["valid", "with-bad-lines"])
@pytest.mark.parametrize("fmt", JSON_FORMATS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_records_survive_any_framing_and_bad_lines_are_skipped(tmp_path: Path, fmt: LogFormat, bad: bool,
                                                               data: st.DataObject) -> None:
    text, expected = data.draw(logs(fmt, bad=bad))
    path = tmp_path / "log.jsonl"
    path.write_bytes(text.encode())
    check(list(read(path, fmt)), expected)
    if not bad and expected:
        assert detect(path) is fmt
    # detected, a log with bad lines may be taken for another format, or none: said
    # (InputError), not raised
    with contextlib.suppress(InputError):
        list(read(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompts=st.lists(TEXT.filter(lambda t: not _LINE_ENDS.search(t)), min_size=1, max_size=6),
       bom=st.booleans(), ends=st.lists(st.sampled_from(ENDS), min_size=6, max_size=6))
def test_text_prompts_survive_any_line_ends(tmp_path: Path, prompts: list[str], bom: bool, ends: list[str]) -> None:
    path = tmp_path / "prompts.txt"
    path.write_bytes(((BOM if bom else "") + "".join(p + e for p, e in zip(prompts, ends, strict=False))).encode())
    got = list(read(path, LogFormat.TEXT))
    assert [(r.line, r.prompt) for r in got if isinstance(r, LogRecord)] == list(enumerate(prompts, start=1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.one_of(TEXT, st.integers(), st.none(), st.lists(st.integers(), max_size=2)), max_size=6),
       space=SPACE, bom=st.booleans())
def test_a_json_array_reads_item_by_item(tmp_path: Path, items: list[Any], space: str, bom: bool) -> None:
    path = tmp_path / "prompts.json"
    path.write_bytes(((BOM if bom else "") + space + json.dumps(items, indent=1) + space).encode())
    got = list(read(path, LogFormat.JSON_ARRAY))
    assert len(got) == len(items) == count(path, LogFormat.JSON_ARRAY)
    for n, (item, result) in enumerate(zip(items, got, strict=True), start=1):
        assert result.line == n
        assert isinstance(result, LogRecord) == isinstance(item, str), result
        if isinstance(result, LogRecord):
            assert result.prompt == item


# found by these properties: a log whose first "{" line does not parse but a later one
# does raised JSONDecodeError from detect; a line nested deeper than the json module
# reads raised RecursionError; a JSON array nested 100,000 deep took gigabytes (ijson
# names the place of every event: item.item.item...) and was killed
@example(b'{bad\n{"x": 1}\n')
@example(too_deep.encode() + b"\n")
@example(b'{"messages": [{"role": "user", "content": "x"}]}\n' + too_deep.encode() + b"\n")
@example(b"[" + b"[" * 100_000 + b"]" * 100_000 + b', "a"]')
@example(b'["a", "\xff\xfe"]')
@example(b"\xef\xbb\xbf")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_file_is_read_or_refused(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "any.log"
    path.write_bytes(raw)
    for fmt in (None, *LogFormat):
        try:
            count(path, fmt)
            for item in read(path, fmt):
                assert isinstance(item, LogRecord | BadLine)
        except InputError as exc:
            refused = str(exc)
        else:
            continue
        assert refused and "\n" not in refused, refused
