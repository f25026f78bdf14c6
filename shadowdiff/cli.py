"""The ``shadowdiff`` command line: one group, one subcommand per job.

Each subcommand lives beside the code it drives (``simulator/cli.py``...); this
module only assembles them, so importing it stays cheap.
"""

from __future__ import annotations

import click

from proxy.cli import serve
from proxy.review.cli import review
from replay.cli import bench, compare_command, demo, judge, replay, report
from shadowdiff import __version__
from simulator.cli import simulate


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="shadowdiff")
def main() -> None:
    """Tell whether a change to an LLM deployment changed what the model says."""


main.add_command(simulate)
main.add_command(replay)
main.add_command(report)
main.add_command(judge)
main.add_command(compare_command, "compare")
main.add_command(bench)
main.add_command(demo)
main.add_command(serve)
main.add_command(review)
