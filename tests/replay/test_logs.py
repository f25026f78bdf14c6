"""Every log format, and every kind of bad line."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from shadowdiff.errors import InputError
from shadowdiff.replay import logs
from shadowdiff.replay.logs import (
    CHAT,
    COMPLETIONS,
    BadLine,
    LogFormat,
    LogRecord,
    change_since,
    count,
    detect,
    fingerprint,
    read,
)
from tests.support.replaying import lines, records, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_batch(tmp_path: Path) -> None:
    path = write(tmp_path, lines(
        {"custom_id": "request-1", "method": "POST", "url": CHAT,
         "body": {"model": "M", "messages": [{"role": "user", "content": "Hello world!"}],
                  "max_completion_tokens": 1000, "metadata": {"category": "greeting"}}},
        {"custom_id": "request-2", "method": "POST", "url": COMPLETIONS, "body": {"prompt": "Once"}},
    ))
    assert detect(path) is LogFormat.BATCH
    first, second = records(path)
    assert isinstance(first, LogRecord) and isinstance(second, LogRecord)
    assert (first.key, first.line, first.endpoint, first.category) == ("request-1", 1, CHAT, "greeting")
    assert first.body["max_completion_tokens"] == 1000
    assert first.prompt == "Hello world!"
    assert (second.key, second.endpoint, second.prompt) == ("request-2", COMPLETIONS, "Once")


@pytest.mark.parametrize(("line", "reason"), [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object, got list"),
    ({"custom_id": "x", "method": "POST", "url": CHAT}, "missing body"),
    ({"custom_id": "x", "method": "GET", "url": CHAT, "body": {"messages": [{"role": "user", "content": "x"}]}},
     "method GET is not replayed"),
    ({"custom_id": "x", "method": "POST", "url": "/v1/embeddings", "body": {"input": "x"}},
     "url '/v1/embeddings' is not replayed"),
    ({"custom_id": "x", "method": "POST", "url": CHAT, "body": {"prompt": "x"}}, "does not fit"),
    ({"custom_id": "x", "method": "POST", "url": CHAT, "body": {"messages": []}}, "messages is empty"),
    ({"custom_id": "x", "method": "POST", "url": CHAT, "body": "text"}, "body is not a JSON object"),
])
def test_bad_batch_lines_are_reported_with_their_line_number(tmp_path: Path, line: object, reason: str) -> None:
    good = {"custom_id": "ok", "method": "POST", "url": CHAT, "body": {"messages": [{"role": "user", "content": "x"}]}}
    path = write(tmp_path, lines(good, line, good | {"custom_id": "ok2"}))
    found = records(path, fmt=LogFormat.BATCH)
    assert [type(r) for r in found] == [LogRecord, BadLine, LogRecord]
    bad = found[1]
    assert isinstance(bad, BadLine)
    assert bad.line == 2
    assert reason in bad.reason


def test_bodies(tmp_path: Path) -> None:
    path = write(tmp_path, lines(
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}],
         "temperature": 0.7, "id": "q1", "category": "reasoning"},
        "",
        {"prompt": "The capital of France is", "max_tokens": 5},
        {"model": "x"},
    ))
    assert detect(path) is LogFormat.BODIES
    a, b, bad = records(path)
    assert isinstance(a, LogRecord) and isinstance(b, LogRecord) and isinstance(bad, BadLine)
    assert (a.key, a.category, a.prompt) == ("q1", "reasoning", "Why?")
    assert "id" not in a.body and "category" not in a.body and a.body["temperature"] == 0.7
    assert (b.key, b.line, b.endpoint) == ("line-3", 3, COMPLETIONS)
    assert (bad.line, bad.reason) == (4, "the body has neither messages (chat) nor prompt (completions)")


def test_mt_bench_questions_replay_without_edits() -> None:
    path = EXAMPLES / "mt_bench_questions.jsonl"
    assert detect(path) is LogFormat.QUESTIONS
    found = records(path)
    assert len(found) == 80
    assert all(isinstance(r, LogRecord) for r in found)
    first = found[0]
    assert isinstance(first, LogRecord)
    assert (first.key, first.category, first.endpoint) == ("81", "writing", CHAT)
    assert first.prompt.startswith("Compose an engaging travel blog post")
    second_turns = records(path, turn=2)
    assert isinstance(second_turns[0], LogRecord)
    assert second_turns[0].prompt.startswith("Rewrite your previous response")
    assert isinstance(records(path, turn=3)[0], BadLine)
    assert count(path) == 80


def test_text_and_completions_endpoint(tmp_path: Path) -> None:
    path = write(tmp_path, "What is 2+2?\n\n   \nName a colour.\r\n")
    assert detect(path) is LogFormat.TEXT
    a, b = records(path)
    assert isinstance(a, LogRecord) and isinstance(b, LogRecord)
    assert (a.key, a.body) == ("line-1", {"messages": [{"role": "user", "content": "What is 2+2?"}]})
    assert (b.key, b.prompt) == ("line-4", "Name a colour.")
    (c, _) = records(path, endpoint=COMPLETIONS)
    assert isinstance(c, LogRecord)
    assert c.body == {"prompt": "What is 2+2?"}
    assert count(path) == 2


def test_json_array(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(["first prompt", 3, "third prompt"], indent=2))
    assert detect(path) is LogFormat.JSON_ARRAY
    a, bad, c = records(path)
    assert isinstance(a, LogRecord) and isinstance(bad, BadLine) and isinstance(c, LogRecord)
    assert (a.key, a.prompt, c.key) == ("item-1", "first prompt", "item-3")
    assert bad.reason == "item 2 is not a non-empty string"
    broken = write(tmp_path, '["one", "two", \n  "three" "four"]', "broken.json")
    assert detect(broken) is LogFormat.JSON_ARRAY
    assert count(broken) == 3                       # the progress bar's total, not a traceback
    found = read(broken)
    assert [next(found).line for _ in range(3)] == [1, 2, 3]
    # the rest cannot be read: the run must stop there, not skip one "line" and pass
    with pytest.raises(InputError) as error:
        next(found)
    assert str(error.value).startswith(f"{broken}: the JSON array breaks after item 3 (")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text", ["[INST] Write a haiku about rivers. [/INST]\n[INST] Name a colour. [/INST]\n",
                                  "[1] Explain tides.\n[2] Explain clouds.\n", "[INST]\n"])
def test_a_text_log_whose_lines_start_with_a_bracket_is_text(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert detect(path) is LogFormat.TEXT
    prompts = [r.prompt for r in records(path) if isinstance(r, LogRecord)]
    assert prompts == text.splitlines()
    assert count(path) == len(prompts)


def test_a_json_array_that_does_not_parse_at_its_start_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, '[\n  "one" "two",\n  "three"\n]\n')
    with pytest.raises(InputError, match=r"looks like a JSON array but does not parse: .*--format text"):
        detect(path)


@pytest.mark.parametrize(("text", "fmt"), [
    ("What is 2+2?\nName a colour.\n", LogFormat.TEXT),
    ('["What is 2+2?", "Name a colour."]', LogFormat.JSON_ARRAY),
    (lines({"messages": [{"role": "user", "content": "What is 2+2?"}]}, {"prompt": "Name a colour."}),
     LogFormat.BODIES),
    (lines({"question_id": 1, "turns": ["What is 2+2?"]}, {"question_id": 2, "turns": ["Name a colour."]}),
     LogFormat.QUESTIONS),
    (lines(*({"custom_id": f"r{i}", "method": "POST", "url": "/v1/completions", "body": {"prompt": p}}
             for i, p in enumerate(["What is 2+2?", "Name a colour."]))), LogFormat.BATCH),
])
def test_a_byte_order_mark_is_not_part_of_the_log(tmp_path: Path, text: str, fmt: LogFormat) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert detect(path) is fmt
    found = records(path)
    assert [r.prompt for r in found if isinstance(r, LogRecord)] == ["What is 2+2?", "Name a colour."], found
    assert count(path) == 2


def test_formats_that_match_nothing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is empty"):
        detect(write(tmp_path, "\n\n", "empty"))
    with pytest.raises(InputError, match="match no log format"):
        detect(write(tmp_path, lines({"input": "embed me"}), "other"))
    with pytest.raises(InputError, match="not UTF-8"):
        binary = tmp_path / "binary"
        binary.write_bytes(b"\xff\xfe\x00\x01" * 10)
        detect(binary)
    with pytest.raises(InputError, match="none of them parses"):
        detect(write(tmp_path, "{broken\n{also broken\n", "broken"))
    with pytest.raises(InputError, match="cannot read log"):
        detect(tmp_path / "missing")


def test_detection_survives_a_bad_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, "{oops\n" + lines({"messages": [{"role": "user", "content": "x"}]}) * 3)
    assert detect(path) is LogFormat.BODIES


def test_reading_is_lazy(tmp_path: Path) -> None:
    path = write(tmp_path, lines(*({"prompt": f"p{i}"} for i in range(5000))))
    iterator = read(path)
    first = next(iterator)
    assert isinstance(first, LogRecord)
    assert first.key == "line-1"


def test_a_bad_byte_far_into_a_log_is_found_on_its_own_line_after_every_good_line(tmp_path: Path) -> None:
    """A text file decodes 8 KB ahead: a bad byte on line 3,001 was reported at line
    2,894, and lines 2,894-3,000 were never read (a hostile review's finding)."""
    log = tmp_path / "log.txt"
    log.write_bytes(b"".join(b"question %d\n" % i for i in range(3000)) + b"bad \xff byte\nlast\n")
    got = []
    with pytest.raises(InputError, match=r"line 3001 is not UTF-8"):
        for item in read(log, LogFormat.TEXT):
            got.append(item)
    assert len(got) == 3000


def test_every_line_end_text_mode_knows(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(b"one\r\ntwo\rthree\nfour \xe2\x80\xa8 same line\n")
    assert [r.prompt for r in read(log, LogFormat.TEXT)] == ["one", "two", "three", "four \u2028 same line"]


def test_a_fingerprint_is_the_size_and_sha256_of_the_bytes_read_in_chunks(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "_CHUNK", 7)   # many chunks, and a head that ends inside one
    data = b"".join(b"prompt %d\n" % i for i in range(100))
    log = tmp_path / "log.txt"
    log.write_bytes(data)
    then = fingerprint(log)
    assert (then.size, then.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert logs.Fingerprint.from_json(then.as_json()) == then
    assert logs.Fingerprint.from_json(None) is None and logs.Fingerprint.from_json({"bytes": "1"}) is None
    log.write_bytes(data)                      # written again, the same bytes: unchanged
    assert change_since(log, then) is None
    log.write_bytes(data + b"prompt 100\n")
    appended = change_since(log, then)
    assert appended is not None and appended.startswith("it was appended to"), appended
    log.write_bytes(data.replace(b"prompt 5\n", b"prompt X\n"))   # the same size, another byte
    changed = change_since(log, then)
    assert changed is not None and changed.startswith("its contents changed"), changed
    log.write_bytes(b"prompt X\n" + data)     # longer, but not at its end: changed, not appended
    assert (change_since(log, then) or "").startswith("its contents changed")
    log.write_bytes(data[:-10])                # cut short
    assert (change_since(log, then) or "").startswith("its contents changed")


def test_a_log_from_a_pipe_is_refused_with_what_to_do(tmp_path: Path) -> None:
    """A pipe (``cat log | shadowdiff replay /dev/stdin``) is used up by its first read,
    and its contents cannot be fingerprinted for --resume: refused, never half read."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"What is 2 + 2?\n")
        os.close(write_end)
        pipe = Path(f"/dev/fd/{read_end}")
        for reading in (detect, fingerprint, lambda path: list(read(path, LogFormat.TEXT))):
            with pytest.raises(InputError, match=r"is not a regular file.*save the log to a file first"):
                reading(pipe)
    finally:
        os.close(read_end)
