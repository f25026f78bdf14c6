"""Standard output and error that outlive their reader.

``shadowdiff replay … 2>&1 | tee run.log``, then Ctrl+C: the signal goes to the whole
foreground process group, ``tee`` dies with it, and every later write to the pipe fails
with EPIPE. A run that is storing its last pairs and printing the command that resumes it
must not die of that (exit 1, the resume hint lost) nor hang in a progress bar's thread
that raised while it held its lock. So from the first write that finds its reader gone,
the stream's file descriptor points at /dev/null: what follows is written nowhere, and
the interpreter's own flush at exit succeeds too (a failed one turns the exit status into
120). The run goes on, exits with its own code, and is resumed as any other.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO


class Unbroken:
    """A text stream whose writes never fail for a reader gone (``BrokenPipeError``)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost = False   # its reader is gone: what is written goes nowhere

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_nowhere()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_nowhere()

    def _to_nowhere(self) -> None:
        """Point the stream's descriptor at /dev/null, and drop what its buffer holds."""
        self.lost = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            nowhere = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(nowhere, self._stream.fileno())
            finally:
                os.close(nowhere)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()   # (the buffered rest, to /dev/null now)

    def __getattr__(self, name: str) -> Any:   # isatty, fileno, encoding...: the stream's own
        return getattr(self._stream, name)


def keep_writing() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` survive their reader (idempotent)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, Unbroken):
            setattr(sys, name, Unbroken(stream))


def tell(text: str) -> None:
    """A line a person must see (the command that resumes a run) on standard error, and on the
    terminal as well when standard error's reader is gone: ``… 2>&1 | tee run.log`` loses it
    with ``tee``, killed by the same Ctrl+C, and the terminal is where that person is."""
    sys.stderr.write(text + "\n")
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    if getattr(sys.stderr, "lost", False):
        with contextlib.suppress(OSError), open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write(text + "\n")
