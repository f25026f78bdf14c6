"""The review UI's exports (export.csv, export.jsonl): whole, or an error.

An export used to be streamed as the rows were read: a database error after the first
rows sent a 200 and a file cut short, which a script or a spreadsheet takes for the
whole. Now every row is read and written out first, in the request's thread, and
only then sent, with its Content-Length: a database error is the UI's 503 before any
byte. Written to a spooled temporary file, in memory up to ``IN_MEMORY`` bytes and on
disk past it, so that memory stays bounded however many verdicts there are (an export
runs inside ``serve``, beside the proxy: it must not be what runs it out of memory).
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from starlette.responses import Response, StreamingResponse

from shadowdiff.answers.invisible import json_text
from shadowdiff.report.write import spreadsheet_safe, spreadsheet_writer

IN_MEMORY = 8 * 1024 * 1024
CHUNK = 64 * 1024


def csv_export(rows: Iterable[dict[str, Any]], columns: list[str]) -> Response:
    def write(out: IO[str]) -> None:
        writer = spreadsheet_writer(out, columns)
        writer.writeheader()
        writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in rows)

    return _spooled(write, "text/csv; charset=utf-8", "verdicts.csv")


def jsonl_export(rows: Iterable[dict[str, Any]]) -> Response:
    def write(out: IO[str]) -> None:
        for row in rows:
            out.write(json_text(row) + "\n")

    return _spooled(write, "application/x-ndjson", "verdicts.jsonl")


def _spooled(write: Callable[[IO[str]], None], media_type: str, filename: str) -> Response:
    """``write``'s whole output, then a response that sends it (blocking: call it in a thread)."""
    # (closed by the response once sent, or below on an error: it outlives this function)
    spool = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")
        write(text)
        text.flush()
        text.detach()             # (closing the wrapper would close the spool)
        size = spool.tell()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return StreamingResponse(_chunks(spool), media_type=media_type,
                             headers={"content-disposition": f"attachment; filename={filename}",
                                      "content-length": str(size)})


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    with spool:
        while chunk := spool.read(CHUNK):
            yield chunk
