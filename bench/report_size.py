"""What a report of a large run costs: its files' sizes, the time to write
them, and the time Chromium takes to open report.html.

Fills a SQLite store (in a temporary directory) with a replay run of ``--pairs`` pairs
(tests/support/bigstore.py: compared and triaged as replay does), writes the reports with the
default ``--side-by-side`` (1,000 changed pairs and the failed ones), then opens
report.html in headless Chromium (Debian's, driven by Playwright) ``--loads`` times:
the time to the load event, and the time a filter takes to apply. The same page with
its lazy layout of pairs switched off (``content-visibility``) is timed beside it, as
the figure that rule is there for.

    python bench/report_size.py [--pairs 10000] [--loads 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from shadowdiff.report.write import write_reports
from shadowdiff.store import Store

from _common import table

CHROMIUM = "/usr/bin/chromium"
LAZY = "content-visibility: auto;"


def _open_times(html: Path, loads: int) -> tuple[list[float], list[float]]:
    """Seconds to the load event, and to apply the "divergent" filter, per load."""
    from playwright.sync_api import sync_playwright

    loaded, filtered = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(html.as_uri(), wait_until="load")
            loaded.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
            started = time.perf_counter()
            page.click("label[for=show-outcome-divergent]")
            page.evaluate("document.body.offsetHeight")      # the layout the click asked for
            filtered.append(time.perf_counter() - started)
            page.close()
        browser.close()
    return loaded, filtered


def main() -> None:
    from tests.support.bigstore import big_run  # once _common has put the repository on the path

    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = Store.open(Path(directory) / "store")
        started = time.perf_counter()
        run = big_run(store, args.pairs)
        filled = time.perf_counter() - started
        out = Path(directory) / "out"
        started = time.perf_counter()
        write_reports(store, run, out)
        written = time.perf_counter() - started
        store.close()
        sizes = [(f.name, f"{f.stat().st_size / 1e6:.2f} MB") for f in sorted(out.iterdir())]
        html = out / "report.html"
        pairs = html.read_text(encoding="utf-8").count('<article class="pair"')
        eager = out / "eager.html"
        eager.write_text(html.read_text(encoding="utf-8").replace(LAZY, ""), encoding="utf-8")
        lazy_times, eager_times = _open_times(html, args.loads), _open_times(eager, args.loads)
    print(table([("file", "size"), *sizes]))
    print(f"\n{args.pairs:,} pairs (stored in {filled:.1f} s); reports written in {written:.1f} s; "
          f"report.html shows {pairs:,} pairs side by side")
    rows = [("report.html in Chromium", "load event, median", "a filter applied, median")]
    for name, (loaded, filtered) in (("as written (lazy layout)", lazy_times), ("every pair laid out", eager_times)):
        rows.append((name, f"{statistics.median(loaded):.2f} s", f"{statistics.median(filtered) * 1000:.0f} ms"))
    print(table(rows))
    print(f"ratio, every pair laid out / as written: "
          f"{statistics.median(eager_times[0]) / statistics.median(lazy_times[0]):.1f}x to load")


if __name__ == "__main__":
    main()
