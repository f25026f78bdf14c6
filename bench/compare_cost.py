"""What one comparison costs: 1,000- and 32,000-character pairs (and megabyte ones).

Targets: a 1,000-character pair in at most 0.1 ms, a
32,000-character pair in at most 20 ms. Three kinds of pair per size: one digit
changed, a wording drift from the middle on (the common FP8 case), and two unrelated
answers (the worst case for the Indel similarity). difflib's ratio with autojunk off
(the opt-in compatibility column) is shown for scale. Past the targets: megabyte pairs
and a 50,000-line one, with what the side-by-side view (``text_rows``) costs them.

    python bench/compare_cost.py
"""

from __future__ import annotations

import difflib
import functools
import statistics
import time
from collections.abc import Callable

from shadowdiff.answers.compare import compare
from shadowdiff.report.diffview import text_rows
from shadowdiff.simulator import profiles
from shadowdiff.simulator.baseline_text import generate, prompt_key
from shadowdiff.simulator.drift import apply_profile
from shadowdiff.simulator.vocab import vocabulary

from _common import pin, table


def text_of(length: int, seed: int) -> str:
    parts, i = [], 0
    while sum(map(len, parts)) < length:
        parts.append(generate(f"Question {seed}-{i}: explain rivers, bridges and taxes.").text)
        i += 1
    return "\n\n".join(parts)[:length]


def drifted(text: str) -> str:
    """The same text with a wording drift from about the middle on."""
    half = len(text) // 2
    prompt = "bench"
    wording = profiles.Profile("w", {profiles.DriftKind.WORDING: 1.0})
    tokens = vocabulary().encode(text[half:])
    return text[:half] + apply_profile(wording, prompt_key(prompt), prompt, tokens).text


def timed(fn: Callable[[], object], budget: float = 1.0) -> float:
    """Median seconds per call over about ``budget`` seconds."""
    fn()
    runs, samples, start = 0, [], time.perf_counter()
    while time.perf_counter() - start < budget or runs < 5:
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
        runs += 1
    return statistics.median(samples)


def _difflib_ratio(a: str, b: str) -> float:
    # a new matcher each time: SequenceMatcher caches its matching blocks
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def main() -> None:
    pin(1)
    rows = [("pair", "chars", "compare() ms", "target ms", "difflib ratio ms")]
    for length, target in ((1000, 0.1), (32000, 20.0)):
        base = text_of(length, 1)
        digit = next(i for i, ch in enumerate(base) if ch.isdigit() and i > length // 3)
        cases = {
            "one digit changed": base[:digit] + str((int(base[digit]) + 1) % 10) + base[digit + 1:],
            "wording drift from the middle": drifted(base),
            "unrelated answers": text_of(length, 2),
        }
        for name, other in cases.items():
            ours = timed(functools.partial(compare, base, other)) * 1000
            if length <= 1000:
                slow = timed(functools.partial(_difflib_ratio, base, other)) * 1000
                slow_text = f"{slow:.3f}"
            else:
                slow_text = "(quadratic: skipped)"
            rows.append((name, f"{length:,}", f"{ours:.4f}", f"{target}", slow_text))
    # Beyond any target: a megabyte answer (reasoning, a tool call writing a file) changed
    # at both ends, where the Indel middle is bounded (MAX_CELLS) and so is the side-by-side diff
    # (text_rows: the lines aligned, then the words of the lines that differ).
    length = 1_000_000
    base = text_of(length, 1)
    for name, other in (("changed at both ends", "X" + base[1:-1] + "Y"), ("unrelated answers", text_of(length, 2))):
        ours = timed(functools.partial(compare, base, other), budget=3.0) * 1000
        diff = timed(functools.partial(text_rows, base, other), budget=3.0) * 1000
        rows.append((f"{name} (text_rows {diff:.0f} ms)", f"{length:,}", f"{ours:.1f}", "—", "(quadratic: skipped)"))
    # A long answer changed in two lines far apart: the lines are aligned (within
    # MAX_LINE_CELLS, far past the words' MAX_DIFF_CELLS) and only those two are marked.
    lines = [f"line {i} of a long answer\n" for i in range(50_000)]
    changed = list(lines)
    changed[20_000], changed[35_000] = "line 20000 of a short answer\n", "line 35000 of a long reply\n"
    base, other = "".join(lines), "".join(changed)
    ours = timed(functools.partial(compare, base, other), budget=3.0) * 1000
    diff = timed(functools.partial(text_rows, base, other), budget=3.0) * 1000
    marked = sum(any(row.changed) for row in text_rows(base, other))
    rows.append((f"50,000 lines, 2 changed 15,000 apart (text_rows {diff:.0f} ms, {marked} rows marked)",
                 f"{len(base):,}", f"{ours:.1f}", "—", "(quadratic: skipped)"))
    print("shadowdiff.answers.compare.compare(), median per call, one core\n")
    print(table(rows))


if __name__ == "__main__":
    main()
