"""The words a report uses, each explained once: report.html's "Terms" section (every use of
a term can link to its entry) and report.md's. One list, so that the two cannot drift, and
tests/report/test_glossary.py holds it to the words the reports use."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from markupsafe import Markup, escape

from shadowdiff.triage.scoring import CASCADE_AGREEMENT, TOP_K

# the headline's figures (shadowdiff.report.headline) by the entry that explains each
FIGURE_TERMS = {"changed": "changed", "token-agreement": "token-agreement", "factual": "factual",
                "flips": "flip", "reviewed": "factual", "errors": "error", "capped": "capped", "speed": "ttft"}


@dataclass(frozen=True)
class Term:
    """One entry: ``anchor`` is its id in report.html (``term-…``)."""

    anchor: str
    term: str
    meaning: str


@functools.cache
def terms() -> tuple[Term, ...]:
    """Every entry, in the order a reader meets them: the decision, the outcomes, then the measures."""
    return (
        Term("decision", "PASS, FAIL, INCOMPLETE",
             "The decision a release is gated on (exit codes 0, 1 and 2). PASS: every gate was checked and passed. "
             "FAIL: a gate surely failed (a reviewer's factual verdict against the candidate, a flip, a measure "
             "whose whole interval is beyond its limit). INCOMPLETE: not decided yet (unreviewed pairs, too few "
             "pairs, too many errors, answers cut by the token cap, an interval across its limit, an unfinished "
             "run); the decision's reasons say what would decide it."),
        Term("pair", "pair, comparable pair",
             "One prompt's answers from the baseline and the candidate. A pair is comparable when both were "
             "decoded deterministically (temperature 0, or a seed): only then does a difference mean the "
             "deployment changed, and only those count in the rates."),
        Term("identical", "identical", "The two answers are byte for byte the same: content, reasoning, tool "
             "calls, refusal, every choice."),
        Term("equivalent", "equivalent", "Not identical, but the same once whitespace in prose and Unicode "
             "normalization (NFC) are set aside: a change of formatting only."),
        Term("near", "near", "Changed, with a similarity at or above the near threshold (0.9 by default)."),
        Term("divergent", "divergent", "Changed, with a similarity below the near threshold."),
        Term("unanswered", "unanswered", "Neither side gave an answer (both cut at the token cap before any "
             "text, or empty): nothing was compared."),
        Term("error", "error", "A side failed (a refused request, a timeout, a broken stream): nothing was "
             "compared. Errors are gated on apart (--max-errors)."),
        Term("changed", "changed, changed in substance",
             "Changed: both sides answered and the answers are not identical (equivalent, near or divergent). "
             "Changed in substance: near or divergent, not a matter of formatting: the pairs a reviewer looks at."),
        Term("similarity", "similarity",
             "Normalized Indel similarity: 1 minus the characters to delete and insert to turn one answer into "
             "the other, over both lengths (1.0: the same; words for answers beyond 8,000 characters)."),
        Term("noise-floor", "replica, noise floor",
             "The replica is a second copy of the baseline, asked the same requests. Even at temperature 0 an "
             "engine's answers change with batching and scheduling; how often the replica differs from the "
             "baseline is the noise floor, what the candidate's changes are measured against."),
        Term("excess", "excess over the noise floor",
             "The candidate's changed rate minus the replica's on the same prompts, with its 95 % interval: the "
             "changes the candidate makes beyond what the baseline does to itself (--max-excess-divergence)."),
        Term("interval", "95 % interval",
             "The range the true value lies in, given the prompts sampled, 95 times in 100: a gate fails only "
             "when the whole interval is beyond its limit, and is undecided while the interval straddles it."),
        Term("token-agreement", "token agreement (teacher-forced)",
             "The candidate is shown the baseline's answer token by token (teacher forcing: it reads the answer "
             "instead of writing its own) and asked, at each token, what it would write next. Token agreement "
             "is the share of the baseline's tokens that are the candidate's own top choice. The baseline read "
             "the same way agrees with itself a little below 100 %: its figure is the floor the candidate's is "
             "measured against."),
        Term("kl", "KL per token",
             f"How far the candidate's next-token probabilities moved from the baseline's, in nats a token "
             f"(Kullback-Leibler divergence over the top {TOP_K} tokens): 0 for the same model; larger for "
             "harsher quantization, even where the top choice stays the same."),
        Term("first-divergence", "first divergent token",
             "Where the two answers first part, in tokens (and characters). Everything after it follows from "
             "that one choice."),
        Term("margin", "top-1/top-2 margin",
             "At the first divergent token, how much more likely the baseline's first choice was than its "
             "second: the difference of their log-probabilities. A small margin is a near-tie, which numerics "
             "can tip either way; a large one is a confident change."),
        Term("cascade", "cascade",
             f"A pair changed in substance whose candidate still agrees on {CASCADE_AGREEMENT:.0%} or more of the "
             "baseline's tokens read teacher-forced: the texts part after one near-tie and then differ "
             "throughout, though the models barely disagree."),
        Term("signal", "signals",
             "What the machine found in a changed pair: numbers, negation, boolean, label, structured (JSON or "
             "tool calls), refusal, choices, code, truncation, repetition, length or reasoning that differ; a flip; "
             "where the answers part (divergence); a cascade. Signals are evidence for a reviewer, never a verdict."),
        Term("factual", "factual regression, reviewed",
             "A reviewer's verdict that the candidate gets a fact or number wrong that the baseline got right: "
             "one fails the run. Reviewed: the pairs changed in substance that have a reviewer's verdict "
             "(shadowdiff review); --min-reviewed says how many must, --without-review decides on the measures "
             "alone."),
        Term("suggested", "suggested verdict",
             "The verdict the signals suggest (factual for a changed number, label or JSON value; minor for a "
             "cut or a repetition). Only a reviewer's verdict counts."),
        Term("priority", "review priority",
             "The order pairs are reviewed in, from the pair's strongest signal: a flip above all, then changed "
             "numbers (100), negations, booleans, labels, JSON, refusals, down to length (40) and reasoning (30). "
             "Higher is reviewed first."),
        Term("flip", "graded, flip",
             "Prompts with a reference answer are graded on each side. A flip is a pair where one side is right "
             "and the other wrong; a flip against the candidate is a regression no reviewer is needed to see."),
        Term("capped", "cut by the token cap",
             "Both answers reached --max-tokens: what they would have said after it was never compared "
             "(--max-capped)."),
        Term("ttft", "TTFT, inter-token latency, p50, p95",
             "Time to first token: from the request written to the first token's arrival. Inter-token latency: "
             "the mean time between the tokens after the first. p50 and p95: the median, and the value 95 % of "
             "requests stay under. Measured under the run's own load; shadowdiff bench measures speed apart."),
    )


@functools.cache
def _by_anchor() -> dict[str, Term]:
    return {t.anchor: t for t in terms()}


def link(anchor: str, hover: bool = True) -> Markup:
    """A "?" beside a word in report.html: its meaning on hover (``hover``: not in each of a
    thousand pairs, where the same sentences would double the page), its entry in Terms on a
    click. ``KeyError`` for an entry there is not (a test renders every use)."""
    term = _by_anchor()[anchor]
    if not hover:
        return Markup('<a class="term" href="#term-{}" aria-label="what {} means">?</a>').format(
            anchor, escape(term.term))
    return Markup('<a class="term" href="#term-{}" title="{}" aria-label="what {} means">?</a>').format(
        anchor, escape(term.meaning), escape(term.term))
