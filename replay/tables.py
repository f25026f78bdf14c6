"""Prompt logs as tables: CSV and TSV with a header row naming a prompt column.

A spreadsheet export of prompts is common, and read as text it sends its header as the
first prompt and every row, commas and all, as one. A table is read by the ``csv``
module instead (quoted fields may span lines): the prompt from the first column named as
one (``PROMPT_COLUMNS``), and beside it, where there are such columns, the record's id,
category, model, reference answer and grader. A table without a prompt column is
refused, naming the columns it has.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shadowdiff.errors import InputError

PROMPT_COLUMNS = ("prompt", "question", "input", "instruction", "query", "text", "content", "message")
ID_COLUMNS = ("custom_id", "question_id", "id", "key")
SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
_NAME = re.compile(r"[a-z_][a-z0-9_ .-]{0,63}")   # a column's name, as a header cell would be


def delimiter(path: Path, first_line: str, second_line: str | None = None) -> str | None:
    """The table's delimiter if the log is one, else None: by its name (``.csv``, ``.tsv``), or
    a first line that reads as a header - short names, none twice, one a prompt column -
    over a second line of as many fields (so that a text log's "Question, what is...?" is
    a prompt, not a header)."""
    by_name = SUFFIXES.get(path.suffix.lower())
    if by_name is not None:
        return by_name
    for candidate in ("\t", ","):
        header = _header(first_line, candidate)
        if (candidate in first_line and _prompt_column(header) is not None
                and all(_NAME.fullmatch(cell) for cell in header) and len(set(header)) == len(header)
                and (second_line is None or len(_header(second_line, candidate)) == len(header))):
            return candidate
    return None


def _header(line: str, separator: str) -> list[str]:
    return [cell.strip().lower() for cell in next(csv.reader([line], delimiter=separator), [])]


def _prompt_column(header: list[str]) -> int | None:
    for name in PROMPT_COLUMNS:
        if name in header:
            return header.index(name)
    return None


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    return next((header.index(name) for name in names if name in header), None)


def _rows(path: Path, separator: str) -> Iterator[tuple[int, list[str]]]:
    """Each row after the header with the line it ends on."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))   # (a long prompt is one field)
    with path.open("r", encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=separator)
        try:
            for row in reader:
                yield reader.line_num, row
        except csv.Error as exc:
            raise InputError(f"{path}: line {reader.line_num} is not a table row ({exc}); the rest of the log "
                             "cannot be read") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{path} is not UTF-8 text ({exc.reason})") from None


@dataclass(frozen=True)
class Row:
    """One row of a table log: its prompt and what stands beside it, or why it is unusable."""

    line: int
    prompt: str | None = None     # None: the row cannot be used (``problem``)
    key: str | None = None
    category: str | None = None
    model: str | None = None
    reference: str | None = None
    grader: str | None = None
    problem: str | None = None


def read(path: Path, separator: str) -> Iterator[Row]:
    """The table's rows after its header, in order; ``InputError`` for a table without a prompt column."""
    rows = _rows(path, separator)
    first = next(((line, row) for line, row in rows if any(cell.strip() for cell in row)), None)
    if first is None:
        raise InputError(f"{path} is empty: there is nothing to replay")
    header = [cell.strip().lower() for cell in first[1]]
    prompt = _prompt_column(header)
    if prompt is None:
        other = next((c for c in (";", "|") if len(header) == 1 and c in header[0]), None)
        raise InputError(f"{path} is a table whose first line names no prompt column (it has: "
                         f"{', '.join(h for h in header if h)[:300] or 'nothing'}): its first line must be a header "
                         f"that names one {' or '.join(PROMPT_COLUMNS[:3])}"
                         + (f"; its cells seem split by {other!r}, and a table's are split by ',' (.csv) or a tab "
                            "(.tsv)" if other else ""))
    if count(path, separator) == 0:
        raise InputError(f"{path} has a header and no row under it: there is nothing to replay")
    columns = {name: _column(header, names) for name, names in (
        ("key", ID_COLUMNS), ("category", ("category",)), ("model", ("model",)), ("reference", ("reference",)),
        ("grader", ("grader",)))}
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            yield Row(line, problem=f"{len(row)} fields, the header has {len(header)}")
            continue
        cells = row + [""] * (len(header) - len(row))
        if not cells[prompt].strip():
            yield Row(line, problem=f"the {header[prompt]} column is empty")
            continue
        beside = {name: (cells[i].strip() or None) if i is not None else None for name, i in columns.items()}
        if columns["reference"] is not None:   # (a reference answer as written, spaces and all)
            beside["reference"] = cells[columns["reference"]] or None
        yield Row(line, cells[prompt], **beside)


def count(path: Path, separator: str) -> int:
    """The table's rows, the header left out."""
    return max(0, sum(1 for _, row in _rows(path, separator) if any(cell.strip() for cell in row)) - 1)
