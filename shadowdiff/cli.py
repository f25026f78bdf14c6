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

# command name -> "module:attribute" of its click command
COMMANDS = {
    "simulate": "simulator.cli:simulate",
    "replay": "replay.cli:replay",
    "compare": "replay.cli:compare_command",
    "bench": "replay.cli:bench",
    "demo": "replay.cli:demo",
    "serve": "proxy.cli:serve",
    "report": "shadowdiff.commands:report",
    "judge": "shadowdiff.commands:judge",
    "review": "shadowdiff.commands:review",
    "reviewers": "shadowdiff.review.cli:reviewers",
    "close": "shadowdiff.commands:close",
    "prune": "shadowdiff.commands:prune_command",
    "plan": "shadowdiff.commands:plan",
}


class LazyGroup(click.Group):
    """A group whose commands are imported the first time they are asked for."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="shadowdiff")
def main() -> None:
    """Tell whether a change to an LLM deployment changed what the model says."""
