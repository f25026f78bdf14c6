"""Reports: a run's numbers, headline, plots and side-by-side diffs, written as HTML, Markdown and JSON."""

# Changed pairs shown side by side in report.html and report.md, and as many failed ones: here,
# not in ``write``, so that the commands' ``--side-by-side`` shows it without loading the writer.
SIDE_BY_SIDE = 1000
