"""Reference answers for a replay: from the log's lines, or from a file by id.

``replay --references FILE`` reads JSONL, one reference a line, matched to the log's
records by id (a record's key: its ``custom_id``, ``question_id`` or ``id``):

* ``{"id" | "custom_id" | "question_id": ..., "reference": ..., "grader": ...}``
  (``grader`` optional; ``reference`` may be a list with one per turn, as in MT-Bench's
  question file: the replayed turn's is taken);
* MT-Bench's reference answers, kept apart from its questions:
  ``{"question_id", "model_id", "choices": [{"index": 0, "turns": [...]}]}``: the first
  choice's answer to the replayed turn.

The file is read whole before the run starts (a reference file is small: MT-Bench's
has 30 lines), and a line that cannot be used stops the run there, with the file's line
number: not JSON, no id, no reference, an id given twice, a grader that is not one, a
reference its grader cannot grade by. A reference comes with its grader: the file's
reference is graded by the file line's grader, else ``--grader``, else the grader its
form suggests (``grading.default_grader``); the same for a log line's. A record with a
reference in the log and one in the file is graded by the file's (the file wins), and
the run says how many did; ids of the file that no record of the log has are listed at
the end of the run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shadowdiff.errors import InputError
from shadowdiff.replay.logs import LogRecord
from shadowdiff.triage.grading import Grader, Reference, check_reference, check_type, default_grader, grader_named

_IDS = ("id", "custom_id", "question_id")
_LISTED = 10   # unmatched ids named in the closing warning


@dataclass(frozen=True)
class FileReference:
    reference: Reference
    grader: Grader
    line: int


def read_references(path: Path, turn: int = 1, default: Grader | None = None) -> dict[str, FileReference]:
    """The references of ``path`` by id (see the module docstring); ``InputError`` naming
    the line for one that cannot be used."""
    found: dict[str, FileReference] = {}
    seen: dict[str, int] = {}     # every id's line, with a reference for this turn or not
    try:
        with path.open(encoding="utf-8-sig") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    key, reference = _line(line, turn, default)
                except InputError as exc:
                    raise InputError(f"{path}, line {number}: {exc}") from None
                if key in seen:
                    raise InputError(f"{path}, line {number}: id {key!r} is given twice (line {seen[key]} "
                                     "has it too)")
                seen[key] = number
                if reference is not None:
                    found[key] = FileReference(reference[0], reference[1], number)
    except OSError as exc:
        raise InputError(f"cannot read references {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text ({exc.reason}); references are JSON lines") from None
    return found


def _line(line: str, turn: int, default: Grader | None) -> tuple[str, tuple[Reference, Grader] | None]:
    """One line's id and its reference with its grader (None: the line has none for ``turn``)."""
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise InputError("nested too deeply to read") from None
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}")
    key = next((value[k] for k in _IDS if value.get(k) is not None), None)
    if key is None:
        raise InputError("no id: a reference line has id, custom_id or question_id")
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise InputError(f"an id is a string or a whole number, not {json.dumps(key)[:80]}")
    grader = value.get("grader")
    if grader is not None and not isinstance(grader, str):
        raise InputError(f"grader is the name of a grader, not {type(grader).__name__}")
    if grader:
        grader_named(grader)   # a misspelt grader is an error even on a line without a reference
    reference = _reference_of(value, turn)
    if reference is None or (isinstance(reference, str) and not reference.strip()):   # none for this turn
        return str(key), None
    check_type(reference)
    chosen = grader_named(grader) if grader else default or default_grader(reference)
    check_reference(reference, chosen)
    return str(key), (reference, chosen)


def _reference_of(value: dict[str, Any], turn: int) -> Any:
    if "reference" in value:
        reference = value["reference"]
        if isinstance(reference, list):   # one per turn
            return reference[turn - 1] if len(reference) >= turn else None
        return reference if turn == 1 else None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
            and isinstance(choices[0].get("turns"), list):   # MT-Bench's reference answers
        turns = choices[0]["turns"]
        if len(turns) < turn:
            raise InputError(f"has {len(turns)} turn{'' if len(turns) == 1 else 's'}, turn {turn} is replayed")
        return turns[turn - 1]
    raise InputError("no reference: a line has a reference field, or MT-Bench's choices with their turns")


def grading_settings(path: Path | None, default: Grader | None) -> dict[str, Any]:
    """What the run records of its grading (a resume must grade alike): the default grader,
    the references file and a digest of its contents."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None
    return {"grader": default.value if default else None, "references": str(path.resolve()) if path else None,
            "references_sha256": digest}


@dataclass
class Grading:
    """Each record's reference and grader, from the file (which wins) or the log line, and
    what the run made of the file: the ids it matched, the records it overrode."""

    default: Grader | None = None
    by_key: dict[str, FileReference] = field(default_factory=dict)
    path: Path | None = None
    matched: set[str] = field(default_factory=set)
    overridden: list[int] = field(default_factory=list)   # log lines whose own reference the file replaced

    def resolve(self, record: LogRecord) -> LogRecord:
        """``record`` with the reference it is graded by and that grader's name (none when
        it has no reference); ``InputError`` for a log line's reference its grader cannot
        grade by."""
        from_file = self.by_key.get(record.key)
        if from_file is not None:
            self.matched.add(record.key)
            if record.reference is not None or record.grader is not None:
                self.overridden.append(record.line)
            return replace(record, reference=from_file.reference, grader=from_file.grader.value)
        if record.reference is None:
            return replace(record, grader=None)
        grader = grader_named(record.grader) if record.grader else self.default or default_grader(record.reference)
        check_reference(record.reference, grader)
        return replace(record, grader=grader.value)

    def notes(self) -> list[str]:
        """Warnings for the end of the run: records whose reference the file replaced, and
        ids of the file no record had."""
        notes = []
        if self.overridden:
            lines = ", ".join(map(str, self.overridden[:_LISTED])) + (", ..." if len(self.overridden) > _LISTED
                                                                       else "")
            notes.append(f"{len(self.overridden)} records have a reference or grader in the log and a reference in "
                         f"{self.path}: the file's was used (log lines {lines})")
        unmatched = [key for key in self.by_key if key not in self.matched]
        if unmatched:
            named = ", ".join(repr(k) for k in unmatched[:_LISTED]) + (", ..." if len(unmatched) > _LISTED else "")
            notes.append(f"{len(unmatched)} of the {len(self.by_key)} references in {self.path} match no record of "
                         f"the log (ids {named}): those prompts were not graded; a record's id is its custom_id, "
                         "question_id or id, else line-N")
        return notes
