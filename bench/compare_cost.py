"""What one comparison costs, against rapidfuzz's Indel ratio on the same strings, and how
close its similarity comes to the exact one.

Pairs of 1,000, 32,000 and 1,000,000 characters, three kinds each: one digit changed, a
wording drift from the middle on (the common FP8 case), and two unrelated answers (the
worst case for the Indel similarity). Per pair, in interleaved rounds on one core:

- CPU per ``compare()`` call (and per ``compare_answers()`` call on one-choice answers
  holding the two texts, what the proxy and replay run), and per
  ``rapidfuzz.distance.Indel.normalized_similarity`` call on the same two strings (the
  reference: the exact character-level Indel ratio), timed twice per round (the second
  time is the control: reference against itself);
- the similarity ``compare()`` reports, whether it says it estimated it (past its cost
  budgets: then a lower bound), its gap to the exact Indel ratio over the units it
  compares (characters; words and punctuation marks past ``WORD_LEVEL_FROM``) and to the
  exact character-level ratio, both computed by rapidfuzz without any cut-off.

A second table keeps the side-by-side view's cost (``text_rows``) on the megabyte pairs and
on a 50,000-line answer changed in two lines.

    python bench/compare_cost.py            # everything (a few minutes: the exact
                                            # references at 1 MB are quadratic)
    python bench/compare_cost.py --quick    # 1k and 32k only
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import time
from collections.abc import Callable

from rapidfuzz.distance import Indel

from shadowdiff.answers.compare import WORD_LEVEL_FROM, compare, compare_answers
from shadowdiff.answers.records import Answer
from shadowdiff.report.diffview import text_rows
from shadowdiff.vocabulary import Side

from _common import pin, table

# the units compare() counts past WORD_LEVEL_FROM characters (its definition, restated here
# so that the exact figure does not come from the code it checks)
_UNITS = re.compile(r"\w+|[^\w\s]")


def one_digit(text: str) -> str:
    at = next(i for i, ch in enumerate(text) if ch.isdigit() and i > len(text) // 3)
    return text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:]


def cpu_per_call(fn: Callable[[], object], least: float) -> float:
    """CPU seconds per call of ``fn``, over a batch of at least ``least`` CPU seconds."""
    calls, start = 0, time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - start
        if spent >= least:
            return spent / calls


def interleaved(fns: list[Callable[[], object]], rounds: int, least: float) -> list[float]:
    """The median CPU per call of each function, timed in turn in every round."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            samples[i].append(cpu_per_call(fn, least))
    return [statistics.median(s) for s in samples]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def _answer(side: Side, text: str) -> Answer:
    """A one-choice answer holding ``text``: what the proxy and replay compare."""
    return Answer(side=side, model="m", text=text, finish_reason="stop")


def pairs(length: int) -> dict[str, tuple[str, str]]:
    from tests.support.longtexts import drifted, long_answer  # once _common has put the repository on the path

    base = long_answer(length, 1)
    return {"one digit changed": (base, one_digit(base)),
            "wording drift from the middle": (base, drifted(base, "bench")),
            "unrelated answers": (base, long_answer(length, 2))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 32k pairs only")
    args = parser.parse_args()
    pin(1)
    head = ("pair", "chars", "compare() µs", "compare_answers() µs", "Indel µs (ref)", "compare/ref",
            "ref/ref (control)", "similarity", "estimated", "exact (units)", "gap", "exact (chars)", "gap")
    rows = [head]
    sizes = (1000, 32_000) if args.quick else (1000, 32_000, 1_000_000)
    for length in sizes:
        for name, (a, b) in pairs(length).items():
            ours = functools.partial(compare, a, b)
            whole = functools.partial(compare_answers, _answer(Side.BASELINE, a), _answer(Side.CANDIDATE, b))
            reference = functools.partial(Indel.normalized_similarity, a, b)
            started = time.process_time()
            exact_chars = reference()
            slow = time.process_time() - started > 1.0   # the exact ratio of a megabyte pair: seconds
            rounds, least = (1, 0.0) if slow else (5, 0.05 if length < 1_000_000 else 0.3)
            t_ours, t_whole, t_ref, t_control = interleaved([ours, whole, reference, reference], rounds, least)
            result = compare(a, b)
            if max(len(a), len(b)) > WORD_LEVEL_FROM:
                exact_units = Indel.normalized_similarity(_UNITS.findall(a), _UNITS.findall(b))
            else:
                exact_units = exact_chars
            score = result.similarity if result.similarity is not None else float("nan")
            rows.append((name, f"{length:,}", _us(t_ours), _us(t_whole), _us(t_ref), f"{t_ours / t_ref:.1f}x",
                         f"{t_control / t_ref:.2f}x", f"{score:.4f}", "yes" if result.similarity_estimated else "no",
                         f"{exact_units:.4f}",
                         f"{score - exact_units:+.4f}", f"{exact_chars:.4f}", f"{score - exact_chars:+.4f}"))
    print("compare() against rapidfuzz's Indel ratio on the same strings: CPU per call (median of "
          "interleaved rounds, one core), similarity against the exact ratio\n")
    print(table(rows))
    if not args.quick:
        print()
        print(table(side_by_side()))


def side_by_side() -> list[tuple[str, ...]]:
    """What the side-by-side view costs (``text_rows``) where compare() is cheapest to
    misjudge: megabyte pairs, and a long answer changed in two lines far apart (the lines are
    aligned within MAX_LINE_CELLS and only those two are marked)."""
    from tests.support.longtexts import long_answer  # once _common has put the repository on the path

    rows = [("pair", "chars", "compare() ms", "text_rows ms", "rows marked")]
    base = long_answer(1_000_000, 1)
    lines = [f"line {i} of a long answer\n" for i in range(50_000)]
    changed = list(lines)
    changed[20_000], changed[35_000] = "line 20000 of a short answer\n", "line 35000 of a long reply\n"
    cases = {"1 MB changed at both ends": (base, "X" + base[1:-1] + "Y"),
             "1 MB unrelated answers": (base, long_answer(1_000_000, 2)),
             "50,000 lines, 2 changed 15,000 apart": ("".join(lines), "".join(changed))}
    for name, (a, b) in cases.items():
        ours, diff = interleaved([functools.partial(compare, a, b), functools.partial(text_rows, a, b)], 3, 0.3)
        marked = sum(any(row.changed) for row in text_rows(a, b))
        rows.append((name, f"{len(a):,}", f"{ours * 1000:.1f}", f"{diff * 1000:.1f}", str(marked)))
    return rows


if __name__ == "__main__":
    main()
