"""``shadowdiff ARGS`` run in this process through click's ``CliRunner``: the same command
objects, options, messages and exit codes as the installed command, without the second or
two a new Python process spends importing them. Tests whose subject is the process itself
(signals, a kill, workers, what a terminal sees) start one instead (``servers.shadowdiff_process``)."""

from __future__ import annotations

import dataclasses
import traceback
from pathlib import Path

from click.testing import CliRunner

from shadowdiff.cli import main


@dataclasses.dataclass(frozen=True)
class Ran:
    """What a command left: its exit code and what it wrote, as ``subprocess.CompletedProcess`` names them."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def shadowdiff(*args: str | Path, input: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """Run ``shadowdiff ARGS`` to its end; an exception no command turned into an exit code
    is shown in ``stderr`` as Python would print it (a test asserting "no Traceback" sees it)."""
    words = tuple(map(str, args))
    result = CliRunner().invoke(main, words, input=input, env=env, prog_name="shadowdiff", catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "Traceback (most recent call last):\n" + "".join(
            traceback.format_exception(result.exception)[1:])
    code = result.exit_code if isinstance(result.exit_code, int) else 1
    return Ran(words, code, result.stdout, stderr)
