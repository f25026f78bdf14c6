"""Reading captured prompt logs, one record at a time.

Five formats are recognised from their first lines (or named with ``--format``):

===============  ===========================================================================
``batch``        OpenAI Batch JSONL, vLLM's ``run-batch`` input: ``custom_id``, ``method``,
                 ``url``, ``body``
``bodies``       request bodies, one JSON object a line, with chat ``messages`` or a
                 completions ``prompt`` (optional ``id`` and ``category`` are kept)
``questions``    question JSONL with ``turns`` (MT-Bench): the first turn by default;
                 turn N comes with the turns before it (``LogRecord.earlier``)
``text``         plain text, one prompt per line
``json-array``   a JSON array of prompt strings
===============  ===========================================================================

A ``batch``, ``bodies`` or ``questions`` line may carry a ``reference`` answer and the
``grader`` to grade it by (``shadowdiff.triage.grading``) at its top level: a bodies line's are
taken out of the body sent (they are no OpenAI fields); a question's ``reference`` may
be a list with one per turn (MT-Bench's math, reasoning and coding questions), of which
the replayed turn's is taken. Only their form is checked here (a string or a number, a
known grader); whether the grader can grade by the reference is checked when the run's
default grader is known (``shadowdiff.replay.references``).

Logs are streamed, never loaded whole (a JSON array is parsed incrementally with
ijson). A UTF-8 byte-order mark is not part of the log, whatever its format, nor of a
line it starts (logs that had one, joined with ``cat``). A line that cannot be used
becomes a ``BadLine`` with its line number and the reason, and the caller decides
whether to skip it or stop; a file that matches no format raises one ``InputError``
that says what was found, and so does a log that cannot be read past some point (a
JSON array that breaks, bytes that are not UTF-8): what follows is lost to the run, so
it must not finish as if it had been read.

A log is a regular file: it is read more than once (its format, its count, the replay),
which a pipe cannot be. A run records the log's ``fingerprint`` (its size and sha256,
read in chunks) when it begins, and ``--resume`` refuses a log whose contents changed
since (``change_since``): the pairs stored were made from the old lines, and the resume
would skip by id lines that may now hold other prompts.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

import ijson

from shadowdiff.answers.records import prompt_text
from shadowdiff.errors import ConfigError, InputError
from shadowdiff.replay import tables
from shadowdiff.triage.grading import check_type, grader_named

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
_PROBE_LINES = 20
_METADATA_KEYS = ("id", "custom_id", "category", "reference", "grader")


def bundled_workload() -> Path:
    """The bundled workload: 20 prompts over the categories the original check used
    (``shadowdiff demo`` replays it; ``shadowdiff bench`` sends it by default)."""
    return Path(str(resources.files("shadowdiff.replay") / "workloads" / "demo.jsonl"))


class LogFormat(StrEnum):
    BATCH = "batch"
    BODIES = "bodies"
    QUESTIONS = "questions"
    TEXT = "text"
    JSON_ARRAY = "json-array"
    CSV = "csv"        # CSV or TSV with a header naming a prompt column (shadowdiff.replay.tables)


FORMAT_WORDS = {
    LogFormat.BATCH: "OpenAI Batch lines (custom_id, method, url, body)",
    LogFormat.BODIES: "request bodies, one JSON object a line (messages or prompt)",
    LogFormat.QUESTIONS: "questions, one JSON object a line (turns)",
    LogFormat.TEXT: "text, one prompt a line",
    LogFormat.JSON_ARRAY: "a JSON array of prompts",
    LogFormat.CSV: "a table (CSV or TSV) whose header names a prompt column",
}


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One request of a log, ready to be replayed."""

    key: str                    # unique within the log: custom_id, question_id, id, or line-N
    line: int                   # 1-based line (or item) number
    endpoint: str               # CHAT or COMPLETIONS
    body: dict[str, Any]        # the request body as logged (overrides are applied later)
    category: str | None = None
    earlier: tuple[str, ...] = ()   # --turn N of a question: the user turns before it, answered first
    reference: str | int | float | None = None   # the right answer, graded by ``grader`` (shadowdiff.triage.grading)
    grader: str | None = None

    @property
    def prompt(self) -> str:
        """The text to show a reviewer: the last user message, or the prompt."""
        return prompt_text(self.body)


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that could not be used, and why."""

    line: int
    reason: str


_BOM = b"\xef\xbb\xbf"
_BOM_TEXT = "\ufeff"   # also at the start of a line: logs written with one and joined with cat
_ARRAY_PROBE_EVENTS = 10_000   # a first item this deep in nesting is taken as JSON without reading on


_LINE_ENDS = re.compile(r"\r\n|\r|\n")
_FORMATS = ("a prompt log is JSONL (OpenAI Batch lines, request bodies, or questions), a JSON array of prompts, "
            "CSV or TSV with a prompt column, or text, one prompt a line")


def _check_file(path: Path) -> None:
    """An ``InputError`` for a log that is not a regular file: a pipe (``cat log |
    shadowdiff replay /dev/stdin``, ``<(...)``) or a device can be read only once, and a
    replay reads its log several times (its format, its model, its count, the replay) and
    fingerprints it for ``--resume``; a second read would find it used up."""
    if path.exists() and not path.is_file():
        raise InputError(f"{path} is not a regular file (a pipe or a device?): a replay reads its log more than "
                         "once and fingerprints it so that --resume can check it is unchanged, which a pipe "
                         "cannot give; save the log to a file first and replay that")


def _open(path: Path) -> Any:
    _check_file(path)
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is not the first prompt's
        return path.open("r", encoding="utf-8-sig", newline=None)
    except OSError as exc:
        raise InputError(f"cannot read log {path}: {exc.strerror or exc}") from exc


def _open_bytes(path: Path) -> Any:
    """The log as bytes, past a byte-order mark if it has one."""
    _check_file(path)
    try:
        f = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read log {path}: {exc.strerror or exc}") from exc
    if f.read(len(_BOM)) != _BOM:
        f.seek(0)
    return f


def _json_error(exc: Exception) -> str:
    # ijson's messages draw the place on further lines; the first says what is wrong
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def detect(path: Path) -> LogFormat:
    """The format of the log at ``path``, from its first non-blank lines."""
    with _open(path) as f:
        try:
            head = [line.removeprefix(_BOM_TEXT) for line in itertools.islice(f, 2000) if line.strip()]
            head = head[:_PROBE_LINES]
        except UnicodeDecodeError:
            raise InputError(f"{path} is not UTF-8 text; a prompt log is JSON or text, one prompt a line") from None
    if not head:
        raise InputError(f"{path} is empty: there is nothing to replay")
    if head[0].startswith("PAR1"):
        raise InputError(f"{path} is Parquet, which is not read: {_FORMATS}; export it to JSONL (pandas: "
                         "df.to_json('log.jsonl', orient='records', lines=True))")
    if "\x00" in "".join(head):
        raise InputError(f"{path} looks binary (it contains NUL bytes); {_FORMATS}")
    yaml = (path.suffix.lower() in (".yaml", ".yml") or head[0].strip() == "---") and "is YAML"
    if yaml or (shape := _yaml_shape(head)):
        raise InputError(f"{path} {yaml or f'looks like YAML ({shape})'}, which is not read: {_FORMATS}; convert "
                         "it to JSONL, one object a line (messages or prompt); if it is text, one prompt a line, "
                         "name it with --format text")
    if tables.delimiter(path, head[0], head[1] if len(head) > 1 else None) is not None:
        return LogFormat.CSV
    if head[0].lstrip().startswith("["):
        problem = _json_array_problem(path)
        if problem is None:
            return LogFormat.JSON_ARRAY
        if _looks_like_json(head[0]):
            raise InputError(f"{path} looks like a JSON array but does not parse: {problem} (if it is one "
                             "prompt a line, name the format with --format text)")
        # else text whose first line starts with a bracket: "[INST] ...", "[1] ..."
    votes: dict[LogFormat, int] = {}
    objects: list[dict[str, Any]] = []
    for line in head:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            objects.append(value)
            kind = _kind_of(value)
            if kind is not None:
                votes[kind] = votes.get(kind, 0) + 1
    if votes:
        return max(votes, key=lambda k: votes[k])
    if objects:
        keys = sorted(objects[0])
        raise InputError(
            f"{path} holds JSON objects (keys: {', '.join(keys[:8])}) that match no log format: expected "
            "OpenAI Batch lines (custom_id, method, url, body), request bodies (messages or prompt), "
            "or questions (turns). Name the format with --format if it is one of these."
        )
    if all(line.lstrip().startswith("{") for line in head):
        raise InputError(f"{path}: the first lines look like JSON objects but none of them parses")
    return LogFormat.TEXT


# a YAML mapping's key ("prompt:", "- messages:", '"prompt": x'), as a log's first line would open with one
_YAML_KEY = re.compile(r"""(- )?("[^"]*"|'[^']*'|[A-Za-z_][\w.-]*):( |$)""")


def _yaml_shape(head: list[str]) -> str | None:
    """Why a log with no YAML suffix is YAML all the same, or None: past its comments, it opens
    with a key, and a later line is indented under it or is an item of a list ("- "), which
    text of one prompt a line never is (and ``--format text`` reads it as text when it is)."""
    lines = [line.rstrip("\r\n") for line in head if not line.lstrip().startswith("#")]
    if len(lines) < 2 or _YAML_KEY.match(lines[0]) is None:
        return None
    under = next((line for line in lines[1:] if line[:1] in (" ", "\t") or line.startswith("- ")), None)
    return None if under is None else f"{lines[0].strip()!r} then {under!r}"


def _json_array_problem(path: Path) -> str | None:
    """None if the log parses as a JSON array at its start - its first two items, or the
    whole array followed by nothing - else what ijson found wrong."""
    depth = items = 0
    with _open_bytes(path) as f:
        try:
            for n, (event, _) in enumerate(ijson.basic_parse(f)):
                if n == 0 and event != "start_array":
                    return f"it starts with {event}"
                depth += event in ("start_array", "start_map")
                depth -= event in ("end_array", "end_map")
                if depth == 1 and event not in ("start_array", "start_map"):
                    items += 1     # an item of the array ended
                # a closed array ("[1] Explain tides.") must be followed by nothing: read on
                if depth > 0 and (items >= 2 or n >= _ARRAY_PROBE_EVENTS):
                    return None
        except ijson.JSONError as exc:
            return _json_error(exc)
    return None


def _looks_like_json(line: str) -> bool:
    """A first line that is the opening of a JSON array ("[", '["...', "[{"), not text."""
    rest = line.lstrip()[1:].lstrip()
    return not rest or rest[0] in "\"{[]"


def check_turn(fmt: LogFormat, turn: int, endpoint: str) -> None:
    """A ``ConfigError`` for a ``--turn`` that would be ignored or cannot be sent."""
    if turn == 1:
        return
    if fmt is not LogFormat.QUESTIONS:
        raise ConfigError(f"--turn {turn}: only question logs (with turns) have turns; this log is {fmt.value}")
    if endpoint != CHAT:
        raise ConfigError(f"--turn {turn} sends a conversation, which needs the chat endpoint (not "
                          "--endpoint completions)")


def _kind_of(value: dict[str, Any]) -> LogFormat | None:
    if "custom_id" in value and "body" in value:
        return LogFormat.BATCH
    if "turns" in value:
        return LogFormat.QUESTIONS
    if "messages" in value or "prompt" in value:
        return LogFormat.BODIES
    return None


def read(path: Path, fmt: LogFormat | None = None, *, turn: int = 1,
         endpoint: str = CHAT) -> Iterator[LogRecord | BadLine]:
    """Yield the log's records (and bad lines) in order, streaming the file.

    ``turn`` picks the question turn for question logs; ``endpoint`` is where plain
    prompts (text, JSON array, questions) are sent.
    """
    fmt = fmt or detect(path)
    if fmt is LogFormat.JSON_ARRAY:
        yield from _read_array(path, endpoint)
        return
    if fmt is LogFormat.CSV:
        yield from _read_table(path, endpoint)
        return
    parse = {LogFormat.BATCH: _batch, LogFormat.BODIES: _bodies, LogFormat.QUESTIONS: _question,
             LogFormat.TEXT: _text}[fmt]
    with _open_bytes(path) as f:
        number = 0
        # Decoded a line at a time (a text file decodes blocks ahead, so a bad byte far on
        # was reported lines early and the good lines before it were never read); the
        # line ends text mode knows: LF, CRLF, and CR alone.
        for raw in f:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}: line {number + 1} is not UTF-8 ({exc.reason}); the rest of the log "
                                 "cannot be read") from None
            for line in _LINE_ENDS.split(text.removesuffix("\n").removesuffix("\r")):
                number += 1
                if not line.strip():
                    continue
                try:
                    yield parse(line.removeprefix(_BOM_TEXT), number, turn, endpoint)
                except _Bad as bad:
                    yield BadLine(number, str(bad))
                except RecursionError:   # deeper than the json module reads
                    yield BadLine(number, "nested too deeply to read")


def count(path: Path, fmt: LogFormat | None = None) -> int:
    """How many non-blank lines (or array items) the log has: the progress bar's total."""
    fmt = fmt or detect(path)
    if fmt is LogFormat.CSV:
        return tables.count(path, _separator(path))
    if fmt is LogFormat.JSON_ARRAY:
        items = 0
        with _open_bytes(path) as f, contextlib.suppress(ijson.JSONError):   # reading says where it breaks
            for _ in _array_items(f):
                items += 1
        return items
    with _open_bytes(path) as f:
        return sum(1 for line in f if line.strip())


class _Bad(Exception):
    """A line's problem, turned into a BadLine by ``read``."""


def _json_object(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise _Bad(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _Bad(f"expected a JSON object, got {type(value).__name__}")
    return value


def _endpoint_of(body: dict[str, Any]) -> str:
    if isinstance(body.get("messages"), list):
        if not body["messages"]:
            raise _Bad("messages is empty")
        return CHAT
    if "prompt" in body:
        if body["prompt"] in ("", [], None):
            raise _Bad("prompt is empty")
        return COMPLETIONS
    raise _Bad("the body has neither messages (chat) nor prompt (completions)")


def _category(value: dict[str, Any]) -> str | None:
    category = value.get("category")
    if category is None and isinstance(value.get("metadata"), dict):
        category = value["metadata"].get("category")
    return None if category is None else str(category)


def _batch(line: str, number: int, turn: int, endpoint: str) -> LogRecord:
    value = _json_object(line)
    missing = [k for k in ("custom_id", "body") if k not in value]
    if missing:
        raise _Bad(f"missing {', '.join(missing)} (an OpenAI Batch line has custom_id, method, url, body)")
    body = value["body"]
    if not isinstance(body, dict):
        raise _Bad("body is not a JSON object")
    url = str(value.get("url", ""))
    method = str(value.get("method", "POST")).upper()
    if method != "POST":
        raise _Bad(f"method {method} is not replayed (only POST)")
    if url not in (CHAT, COMPLETIONS):
        raise _Bad(f"url {url!r} is not replayed (only {CHAT} and {COMPLETIONS})")
    if _endpoint_of(body) != url:
        raise _Bad(f"the body does not fit {url}")
    return LogRecord(str(value["custom_id"]), number, url, body, _category(body) or _category(value),
                     **_graded_by(value))


def _bodies(line: str, number: int, turn: int, endpoint: str) -> LogRecord:
    value = _json_object(line)
    found = _endpoint_of(value)
    key = next((str(value[k]) for k in ("id", "custom_id") if value.get(k) is not None), f"line-{number}")
    body = {k: v for k, v in value.items() if k not in _METADATA_KEYS}
    return LogRecord(key, number, found, body, _category(value), **_graded_by(value))


def _question(line: str, number: int, turn: int, endpoint: str) -> LogRecord:
    value = _json_object(line)
    turns = value.get("turns")
    if not isinstance(turns, list) or not turns:
        raise _Bad("turns is missing or empty")
    if len(turns) < turn:
        raise _Bad(f"has {len(turns)} turn{'' if len(turns) == 1 else 's'}, turn {turn} was asked for")
    for index, text in enumerate(turns[:turn], start=1):
        if not isinstance(text, str) or not text.strip():
            raise _Bad(f"turn {index} is not a non-empty string")
    key = str(value.get("question_id", value.get("id", f"line-{number}")))
    return LogRecord(key, number, endpoint, _body_for(turns[turn - 1], endpoint), _category(value),
                     earlier=tuple(turns[:turn - 1]), **_graded_by(value, turn))


def _graded_by(value: dict[str, Any], turn: int | None = None) -> dict[str, Any]:
    """A line's ``reference`` and ``grader`` (``LogRecord``'s fields), their form checked.
    For a question (``turn`` given), a list holds one reference per turn: the replayed
    turn's is taken (none when it is null, blank or the list is shorter); a single value
    is turn 1's."""
    reference, grader = value.get("reference"), value.get("grader")
    if turn is not None:
        if isinstance(reference, list):
            reference = reference[turn - 1] if len(reference) >= turn else None
        elif turn > 1:
            reference = None
    if isinstance(reference, str) and not reference.strip():
        reference = None   # MT-Bench's placeholder for a turn without one
    if grader is not None and not isinstance(grader, str):
        raise _Bad(f"grader is the name of a grader, not {type(grader).__name__}")
    try:
        if reference is not None:
            check_type(reference)
        if grader is not None:
            grader_named(grader)
    except InputError as exc:
        raise _Bad(str(exc)) from None
    return {"reference": reference, "grader": grader}


def _text(line: str, number: int, turn: int, endpoint: str) -> LogRecord:
    return LogRecord(f"line-{number}", number, endpoint, _body_for(line.rstrip("\r\n"), endpoint))


def _body_for(text: str, endpoint: str) -> dict[str, Any]:
    if endpoint == COMPLETIONS:
        return {"prompt": text}
    return {"messages": [{"role": "user", "content": text}]}


def _separator(path: Path) -> str:
    with _open(path) as f:
        try:
            lines = list(itertools.islice((line for line in f if line.strip()), 2))
        except UnicodeDecodeError:
            raise InputError(f"{path} is not UTF-8 text; {_FORMATS}") from None
    return tables.delimiter(path, lines[0] if lines else "", lines[1] if len(lines) > 1 else None) or ","


def _read_table(path: Path, endpoint: str) -> Iterator[LogRecord | BadLine]:
    for row in tables.read(path, _separator(path)):
        if row.prompt is None:
            yield BadLine(row.line, row.problem or "unusable")
            continue
        body = _body_for(row.prompt, endpoint)
        if row.model:
            body["model"] = row.model
        yield LogRecord(row.key or f"line-{row.line}", row.line, endpoint, body, row.category,
                        reference=row.reference, grader=row.grader)


def _read_array(path: Path, endpoint: str) -> Iterator[LogRecord | BadLine]:
    with _open_bytes(path) as f:
        index = 0
        try:
            for index, item in enumerate(_array_items(f), start=1):
                if isinstance(item, str) and item.strip():
                    yield LogRecord(f"item-{index}", index, endpoint, _body_for(item, endpoint))
                else:
                    yield BadLine(index, f"item {index} is not a non-empty string")
        except ijson.JSONError as exc:
            raise InputError(f"{path}: the JSON array breaks after item {index} ({_json_error(exc)}); "
                             "the rest of the log cannot be read") from None


def _array_items(f: Any) -> Iterator[Any]:
    """The items of a top-level JSON array, as ``ijson.items(f, "item")`` reads them, but
    an item that is an array or an object as None, never built: ijson names the place of
    every event it parses (``item.item.item``...), which for an item nested 100,000 deep
    took gigabytes, and only a string is a prompt."""
    depth, array = 0, None
    for event, value in ijson.basic_parse(f):
        if array is None:
            array = event == "start_array"
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if array and depth == 1:
                yield None
        elif array and depth == 1:
            yield value


_CHUNK = 1 << 20   # what a fingerprint reads at a time: a log of any size in constant memory


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A log's contents as a run recorded them: its size and the sha256 of its bytes."""

    size: int
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"bytes": self.size, "sha256": self.sha256}

    @classmethod
    def from_json(cls, value: Any) -> Fingerprint | None:
        """The fingerprint a run recorded; None if it has none (runs made before the
        fingerprint was taken) or it is not one."""
        if not isinstance(value, dict):
            return None
        size, digest = value.get("bytes"), value.get("sha256")
        if not isinstance(size, int) or not isinstance(digest, str):
            return None
        return cls(size, digest)


def fingerprint(path: Path) -> Fingerprint:
    """The log's size and sha256, read a chunk at a time (never whole)."""
    return _digest(path)[0]


def _digest(path: Path, head: int | None = None) -> tuple[Fingerprint, str | None]:
    """The log's fingerprint and, with ``head``, the sha256 of its first ``head`` bytes
    (None if it is shorter): one pass over the file for both."""
    whole, size = hashlib.sha256(), 0
    head_digest = whole.hexdigest() if head == 0 else None
    with _open_raw(path) as f:
        while chunk := f.read(_CHUNK):
            if head is not None and head_digest is None and size + len(chunk) >= head:
                start = whole.copy()
                start.update(chunk[:head - size])
                head_digest = start.hexdigest()
            whole.update(chunk)
            size += len(chunk)
    return Fingerprint(size, whole.hexdigest()), head_digest


def _open_raw(path: Path) -> Any:
    _check_file(path)
    try:
        return path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read log {path}: {exc.strerror or exc}") from exc


def change_since(path: Path, then: Fingerprint) -> str | None:
    """How the log's contents differ from ``then``, in words; None if they are the same.

    A log that only grew at its end, the bytes it had unchanged, was appended to; any
    other difference is a change."""
    now, head = _digest(path, then.size)
    if now == then:
        return None
    if now.size > then.size and head == then.sha256:
        return (f"it was appended to: {then.size:,} bytes when the run began, {now.size:,} now, the first "
                f"{then.size:,} unchanged")
    return (f"its contents changed: {then.size:,} bytes with sha256 {then.sha256[:12]}… when the run began, "
            f"{now.size:,} bytes with sha256 {now.sha256[:12]}… now")
