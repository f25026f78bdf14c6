"""Reports: a run's numbers, headline, plots and side-by-side diffs, written as HTML, Markdown and JSON."""
