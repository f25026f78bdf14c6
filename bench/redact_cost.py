"""What redaction costs per megabyte, on ordinary text and on text made to be slow.

Everything ``serve`` stores is redacted with the default patterns (shadowdiff.answers.redact),
and so are pair keys and log lines, some of it on the event loop; a pattern that a
client's text can make retry from every position of a long run is quadratic, and a
1 MB prompt would hold the GIL - the whole proxy - for an hour. Each row is the median
of 3 runs over 1 MB; the time should not grow faster than the text (the 4 MB column
over 4 should match the 1 MB one).

    python bench/redact_cost.py
"""

from __future__ import annotations

import statistics
import time

from shadowdiff.answers.redact import DEFAULT_PATTERNS, Redactor, without_queries

from _common import pin, table

MB = 1 << 20
ORDINARY = ("The river flows 42 km north; see https://example.org/a?b=1 or write to ann@example.org. "
            "def f(x): return x ** 2  # key_performance_indicators, token_count, sk-learn\n")
SHAPES = {
    "prose, code, URLs, e-mail": ORDINARY,
    "one letter": "a",
    "a.a.a.": "a.",
    "digits": "1",
    "key_key_": "key_",
    "eyJ-eyJ-": "eyJ-",
    "a@a@": "a@",
    "scheme://:": "a://:",
    "http://a http://a": "http://a",
    "password=password=": "password=",
    "Authorization:": "authorization:",
    "PEM BEGIN without END": "-----BEGIN PRIVATE KEY-----",
    "spaces": " ",
}


def seconds(redactor: Redactor, text: str) -> float:
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        redactor.text(text)
        without_queries(text)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    pin(0)
    redactor = Redactor(DEFAULT_PATTERNS)
    rows = [("text (1 MB of it)", "s per MB", "4 MB: s per MB")]
    for name, unit in SHAPES.items():
        one = seconds(redactor, unit * (MB // len(unit)))
        four = seconds(redactor, unit * (4 * MB // len(unit))) / 4
        rows.append((name, f"{one:.3f}", f"{four:.3f}"))
    print(f"redaction with the {len(DEFAULT_PATTERNS)} default patterns\n")
    print(table(rows))


if __name__ == "__main__":
    main()
