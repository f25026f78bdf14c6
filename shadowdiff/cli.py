"""The ``shadowdiff`` command line: one group, one subcommand per job.

This module is the composition root: the one place that names every package's
commands. The rest of the core never imports a mode (``proxy``, ``replay``,
``simulator``); each mode's commands live beside the code they drive and are
imported only when they run, so ``shadowdiff serve`` loads neither replay nor the
simulator, and ``shadowdiff --version`` loads nothing but click (click's documented
lazy-loading pattern, "Advanced Groups").
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from shadowdiff import __version__

# command name -> "module:attribute" of its click command, in the order of the work: try it,
# measure, mirror, decide, review, keep the store; and what each does, in one sentence (for
# ``--help``, which imports no command)
COMMANDS = {
    "demo": "shadowdiff.replay.cli:demo",
    "replay": "shadowdiff.replay.cli:replay",
    "compare": "shadowdiff.replay.cli:compare_command",
    "bench": "shadowdiff.replay.cli:bench",
    "serve": "shadowdiff.proxy.cli:serve",
    "judge": "shadowdiff.commands.runs:judge",
    "review": "shadowdiff.commands.runs:review",
    "reviewers": "shadowdiff.commands.reviewers:reviewers",
    "report": "shadowdiff.commands.runs:report",
    "plan": "shadowdiff.commands.runs:plan",
    "close": "shadowdiff.commands.runs:close",
    "prune": "shadowdiff.commands.runs:prune_command",
    "simulate": "shadowdiff.simulator.cli:simulate",
}
SUMMARIES = {
    "demo": "Run everything on this machine against simulated servers: a replay and its reports.",
    "replay": "Replay a prompt log against the baseline and the candidate, and compare every answer.",
    "compare": "Compare two files of answers saved earlier (A the baseline, B the candidate).",
    "bench": "Measure each side's speed alone, in alternated rounds, with an interval on each ratio.",
    "serve": "Mirror live traffic: answer clients from the primary, compare with the shadow.",
    "report": "Write a run's reports and decide: exit 0 PASS, 1 FAIL, 2 INCOMPLETE, 3 no decision.",
    "review": "Serve the blind review UI, where people give each changed pair a verdict.",
    "reviewers": "Give each reviewer a sign-in token of their own for the review UI.",
    "judge": "Ask an LLM judge for a suggested verdict on each changed pair (never counted).",
    "plan": "Say how many reviewed pairs bound the factual regression rate at a target.",
    "close": "Close a serve run whose proxies were killed, so that it can be decided.",
    "prune": "Delete old unreviewed pairs of serve runs, keeping every reviewed one.",
    "simulate": "Serve a simulated vLLM server: a test double whose text is synthetic.",
}


class LazyGroup(click.Group):
    """A group whose commands are imported the first time they are asked for."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order of the work (``COMMANDS``), then any added otherwise."""
        return [*self.lazy, *sorted(set(super().list_commands(ctx)) - set(self.lazy))]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with its sentence whole (``SUMMARIES``), without importing it."""
        rows = [(name, SUMMARIES.get(name) or self._summary(ctx, name)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _summary(self, ctx: click.Context, name: str) -> str:
        command = self.get_command(ctx, name)
        return command.get_short_help_str(200) if command is not None else ""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name not in _OWN_LOGGING:
            _visible_logging()
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        from shadowdiff.commands.outputs import keep_writing

        keep_writing()   # (a reader gone, as `| tee` with Ctrl+C, stops no run)
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # every command's error line, one place: errors quote servers, logs and models, and
            # a terminal obeys the ESC and CR they may hold (imported here: --version loads no more)
            from shadowdiff.answers.invisible import safe_text

            # (``message`` is final in click's type hints only: show() reads it as it is)
            vars(exc)["message"] = safe_text(exc.message, lines=True)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):   # --help, Ctrl+C at a prompt: not crashes
            raise
        except Exception:
            # a crash's traceback quotes servers and logs too; it still exits 1, as Python's would
            import traceback

            from shadowdiff.answers.invisible import safe_text

            click.echo(safe_text(traceback.format_exc(), lines=True), err=True, nl=False)
            raise SystemExit(1) from None


# The commands that set up their logging themselves (uvicorn's, with the same filter).
_OWN_LOGGING = frozenset({"serve", "simulate", "review"})


def _visible_logging() -> None:
    """Warnings and errors logged by a command (scoring, the replay's runner) to stderr as
    Python's last-resort handler would write them, but through ``VisibleLogs``: their text
    quotes servers, so no raw ESC or CR reaches the terminal."""
    import logging

    from shadowdiff.answers.invisible import VisibleLogs

    root = logging.getLogger()
    if root.handlers:    # (configured already: an embedding program's, or a test's)
        return
    handler = logging.StreamHandler()
    handler.addFilter(VisibleLogs())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="shadowdiff")
def main() -> None:
    """Tell whether a change to an LLM deployment changed what the model says."""
