"""Reading saved answers, for ``shadowdiff compare A B``.

Three formats, recognised from the file's first characters and first line:

* a JSON list of strings (what the manual check saved): answers matched by position;
* JSONL with an id and a text (``id``/``custom_id``/``question_id`` and
  ``text``/``output``/``answer``/``response``): matched by id;
* vLLM batch output JSONL (``custom_id``, ``response.body``): matched by custom id, the
  body read whole as the proxy and the replay client read one (every choice, reasoning,
  refusal, tool calls, finish reason, usage); a line with an ``error``, or a body that
  cannot be read, is an errored answer.

A line with an id whose answer cannot be read is an errored answer, so that its pair
counts as an error; only a line without an id is skipped.

Files are streamed; the second file's answers are looked up by id, so only that
file's answers are held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ijson

from shadowdiff.answers.parse import read_body
from shadowdiff.answers.records import Choice
from shadowdiff.errors import InputError

_ID_KEYS = ("id", "custom_id", "question_id", "key")
_TEXT_KEYS = ("text", "output", "answer", "response", "content", "completion")


@dataclass(frozen=True)
class SavedAnswer:
    key: str
    line: int
    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    prompt: str = ""
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    reasoning_tokens: int | None = None
    others: tuple[Choice, ...] = ()    # the choices after the first

    @property
    def choices(self) -> list[Choice]:
        return [Choice(0, self.text, self.reasoning, self.refusal, self.tool_calls, self.finish_reason), *self.others]


@dataclass(frozen=True)
class BadAnswer:
    line: int
    reason: str


def read(path: Path) -> Iterator[SavedAnswer | BadAnswer]:
    try:
        with path.open("rb") as f:
            head = f.read(4096).lstrip()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not head:
        raise InputError(f"{path} is empty")
    if head.startswith(b"["):
        yield from _read_list(path)
        return
    if not head.startswith(b"{"):
        raise InputError(f"{path} is neither a JSON list of answers nor JSONL with one answer a line")
    with path.open("r", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                yield BadAnswer(number, f"not valid JSON: {exc}")
                continue
            if not isinstance(value, dict):
                yield BadAnswer(number, "expected a JSON object")
                continue
            yield _from_object(value, number)


def _read_list(path: Path) -> Iterator[SavedAnswer | BadAnswer]:
    with path.open("rb") as f:
        index = 0
        try:
            for index, item in enumerate(ijson.items(f, "item"), start=1):
                if isinstance(item, str):
                    yield SavedAnswer(f"item-{index}", index, item)
                elif item is None:
                    yield SavedAnswer(f"item-{index}", index, "", error="no answer (null)")
                else:
                    yield BadAnswer(index, f"item {index} is not a string")
        except ijson.JSONError as exc:
            yield BadAnswer(index + 1, f"the JSON list breaks after item {index}: {exc}")


def _from_object(value: dict[str, Any], number: int) -> SavedAnswer | BadAnswer:
    key = next((str(value[k]) for k in _ID_KEYS if value.get(k) is not None), None)
    if "response" in value and isinstance(value.get("response"), dict | type(None)) and "custom_id" in value:
        return _from_batch(value, number)
    if key is None:
        return BadAnswer(number, f"no id ({', '.join(_ID_KEYS)})")
    text = next((value[k] for k in _TEXT_KEYS if isinstance(value.get(k), str)), None)
    if text is None:   # an answer we cannot read is an errored answer, never a pair left out
        return SavedAnswer(key, number, "", error=f"no text ({', '.join(_TEXT_KEYS)})")
    return SavedAnswer(key, number, text, value.get("finish_reason"))


def _from_batch(value: dict[str, Any], number: int) -> SavedAnswer | BadAnswer:
    key = str(value["custom_id"])
    response = value.get("response") or {}
    if value.get("error") or response.get("status_code", 200) != 200 or not response.get("body"):
        return SavedAnswer(key, number, "", error=f"batch error: {json.dumps(value.get('error'))[:500]}")
    reading = read_body(response["body"])
    if reading.error is not None:   # an errored answer, compared as one (never a pair left out)
        return SavedAnswer(key, number, "", error=f"response.body: {reading.error}")
    first, *others = reading.read()
    return SavedAnswer(key, number, first.text, first.finish_reason, reading.prompt_tokens, reading.completion_tokens,
                       reasoning=first.reasoning, refusal=first.refusal, tool_calls=first.tool_calls,
                       reasoning_tokens=reading.reasoning_tokens, others=tuple(others))
