"""Writing a run's reports from the store.

``summary.json``, ``report.md``, a self-contained ``report.html`` (inline CSS, no
scripts, every model output escaped), and the per-pair exports: ``pairs.csv``,
``pairs.jsonl``, and the list-of-strings files ``baseline.texts.json`` /
``candidate.texts.json`` the manual check worked from. Every file is written in a
directory of its own and moved into place once all are whole, so a report is never
half-written; pairs are streamed from the store in the review queue's order for the
side-by-side view, which shows the first ``side_by_side`` changed pairs and as many
failed ones (a report of 40,000 diffs is not read by anyone, and a browser struggles to
open it): every pair is in the exports, and in the review UI.

The exports copy every stored pair, texts and all (some 5 KB a pair): a month of pairs
is tens of gigabytes, and the time to write them most of a report's. So they are
``PairsExport.AUTO`` by default: written for a run of up to ``EXPORT_LIMIT`` stored pairs,
left out beyond (the report says so, and how to ask for them); asked for, they are
gzip-compressed beyond that size (``--compress`` / ``--no-compress`` choose). Each is
streamed, a pair at a time.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import functools
import gzip
import hashlib
import importlib.resources
import io
import itertools
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from shadowdiff.answers.invisible import add_filters, json_text, safe_text
from shadowdiff.answers.targets import same_target
from shadowdiff.report import SIDE_BY_SIDE, benchfigures, glossary, headline
from shadowdiff.report.diffview import sides_view
from shadowdiff.report.history import history
from shadowdiff.report.plots import report_plots
from shadowdiff.report.requestview import request_view
from shadowdiff.report.summary import OUTCOMES, Summary, summarize
from shadowdiff.statistics.scorestats import per_token, percent, points, unreadable
from shadowdiff.store import Store, StoredPair
from shadowdiff.triage.scoring import CASCADE_AGREEMENT, TOP_K
from shadowdiff.triage.signals import SIGNAL_KINDS
from shadowdiff.verdict import gates as gating
from shadowdiff.verdict import tokengates
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.verdict.flips import flip_lines, flip_rows
from shadowdiff.verdict.result import Acceptance, noisy_replica
from shadowdiff.vocabulary import (
    ANSWERED,
    NOT_COMPARED_REASONS,
    NOT_MIRRORED_REASONS,
    SUBSTANTIVE,
    Decision,
    NotCompared,
    Outcome,
    Side,
)

# per side in pairs.csv: ttft to the first token of any kind, ttfat to the first answer token
ANSWER_COLUMNS = ("finish_reason", "completion_tokens", "reasoning_tokens", "ttft", "ttfat", "duration", "status",
                  "error")
_PAIR_COLUMNS = ("key", "seq", "category", "outcome", "comparable", "similarity", "similarity_estimated",
                 "difflib_ratio", "first_char",
                 "first_token", "length_ratio", "margin", "noise_outcome", "noise_similarity", "token_agreement",
                 "suggested", "priority")
# the evidence of each pair beside its figures: triage's signals (kind and reason) and, given
# --review-url, where the review UI shows it
CSV_COLUMNS = [
    *_PAIR_COLUMNS, "signals", "review_url",
    *(f"{side}_{col}" for side in ("baseline", "candidate", "replica")
      for col in ANSWER_COLUMNS),
    "flip", "prompt",
]


class PairsExport(StrEnum):
    """Which per-pair files a report writes (``report --pairs-export``)."""

    AUTO = "auto"     # BOTH up to EXPORT_LIMIT stored pairs, NONE beyond
    BOTH = "both"     # pairs.jsonl and the texts files, and pairs.csv
    JSONL = "jsonl"   # pairs.jsonl and the texts files
    CSV = "csv"
    NONE = "none"


IDENTICAL_SHOWN = 200    # identical pairs report.html shows on demand, at most
EXPORT_LIMIT = 100_000   # stored pairs: auto exports them up to this, and compresses them beyond
GZIP_LEVEL = 3           # about a sixth of the size at ~200 MB/s (level 6: a fifth smaller again, 3x the CPU)
JSONL_FILES = ("pairs.jsonl", "baseline.texts.json", "candidate.texts.json")
CSV_FILES = ("pairs.csv",)
# which per-pair exports the last report into a directory wrote: the only ones a later
# report removes when it does not write them again
EXPORTS_WRITTEN = ".shadowdiff-exports"
# every per-pair file a report may write: one the last report wrote and this one does not is
# removed from --out, so that no previous report's pairs lie beside this one's figures
PAIRS_FILES = frozenset(name + gz for name in (*JSONL_FILES, *CSV_FILES) for gz in ("", ".gz"))


@dataclass(frozen=True)
class Exports:
    """The per-pair files a report writes: ``jsonl`` (pairs.jsonl and the texts files),
    ``csv`` (pairs.csv), each ``.gz`` with ``gzip``; ``stored``: the run's stored pairs."""

    choice: PairsExport
    jsonl: bool
    csv: bool
    gzip: bool
    stored: int

    @classmethod
    def of(cls, choice: PairsExport | str, compress: bool | None, stored: int) -> Exports:
        """What ``--pairs-export`` and ``--compress`` (None: by size) make of a run of ``stored`` pairs."""
        choice = PairsExport(choice)
        large = stored > EXPORT_LIMIT
        both = choice is PairsExport.BOTH or (choice is PairsExport.AUTO and not large)
        return cls(choice, both or choice is PairsExport.JSONL, both or choice is PairsExport.CSV,
                   large if compress is None else compress, stored)

    def name(self, file: str) -> str:
        return file + ".gz" if self.gzip else file

    @property
    def names(self) -> list[str]:
        """The files written, pairs.jsonl's and pairs.csv's first."""
        files = [*JSONL_FILES] * self.jsonl + [*CSV_FILES] * self.csv
        return [self.name(f) for f in sorted(files, key=lambda f: not f.startswith("pairs."))]

    @property
    def pairs_files(self) -> list[str]:
        """pairs.jsonl and pairs.csv as written (the files a reader is pointed to)."""
        return [f for f in self.names if f.startswith("pairs.")]

    def note(self) -> str | None:
        """A sentence for the terminal when the exports are not the plain files of a small run."""
        if not self.jsonl and not self.csv:
            if self.choice is PairsExport.NONE:
                return "per-pair exports not written (--pairs-export none): every pair is in the store"
            return (f"per-pair exports (pairs.jsonl, pairs.csv) not written: the run stores {self.stored:,} pairs, "
                    f"over the {EXPORT_LIMIT:,} --pairs-export auto writes; --pairs-export both (or jsonl, csv) "
                    "writes them, gzip-compressed; every pair is in the store and the review UI")
        if self.gzip:
            return "per-pair exports gzip-compressed: " + ", ".join(self.names)
        return None


@dataclass(frozen=True)
class ReportPaths:
    directory: Path
    summary_text: str
    acceptance: Acceptance

    @property
    def html(self) -> Path:
        return self.directory / "report.html"


@contextlib.contextmanager
def _staged(out: Path, owned: Collection[str] = ()) -> Iterator[Path]:
    """A directory of its own inside ``out`` to write every report in, each then moved into
    place once all are whole: a report killed part-way leaves the previous set as it was
    (and no half-written file), and two reports written into one directory at once do not
    write into each other's files. Then the files named in ``owned`` that a previous report
    wrote (its ``EXPORTS_WRITTEN`` list says which) and this one did not are removed, as
    they would no longer match; a file of the same name that no report wrote (the user's
    own) is left alone."""
    staging = Path(tempfile.mkdtemp(prefix=".shadowdiff-report-", dir=out))
    try:
        yield staging
        now = {file.name for file in staging.iterdir()} & set(owned)
        if owned:   # (moved into place with the rest: two reports at once each replace it whole)
            (staging / EXPORTS_WRITTEN).write_text("".join(f"{name}\n" for name in sorted(now)), encoding="utf-8")
        before = _exports_written(out) & set(owned)
        for file in sorted(staging.iterdir()):
            os.replace(file, out / file.name)
        for name in sorted(before - now):
            (out / name).unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _exports_written(out: Path) -> set[str]:
    """The per-pair exports the last report into ``out`` wrote (none known: an empty set)."""
    try:
        return set((out / EXPORTS_WRITTEN).read_text(encoding="utf-8").split())
    except (OSError, UnicodeDecodeError):
        return set()


def _open(path: Path) -> IO[str]:
    return path.open("w", encoding="utf-8", newline="")


def _open_export(path: Path, compressed: bool) -> IO[str]:
    """``path`` for text, through gzip when ``compressed``: streamed, and the same bytes for
    the same pairs (no time in the gzip header; its name without the staging directory)."""
    if not compressed:
        return _open(path)
    return io.TextIOWrapper(gzip.GzipFile(path, "wb", compresslevel=GZIP_LEVEL, mtime=0), encoding="utf-8",
                            newline="")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _pct2(value: float | None) -> str:
    """A share near 1, where one decimal would round 99.96 % to 100 %."""
    return "—" if value is None else f"{100 * value:.2f} %"


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _similarity(value: float | None) -> str:
    """A pair's similarity to three decimals, or more where three would round a changed
    pair's to 1.000 (and read as identical)."""
    if value is None:
        return "—"
    digits = 3
    while value < 1 and f"{value:.{digits}f}" == f"{1:.{digits}f}" and digits < 8:
        digits += 1
    return f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{1000 * value:.1f}"


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _fenced(text: str, info: str = "text") -> str:
    """``text`` as a Markdown code block whose fence no run of backticks inside it can end."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _cell(text: str) -> str:
    """``text`` in a Markdown table's cell: on one line (a line break would end the row, and a
    line of its own could open a heading), its pipes escaped."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")


def _code(text: str) -> str:
    """``text`` as a Markdown code span on one line, whatever backticks it holds."""
    text = " ".join(text.splitlines())
    fence = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# The speed figures, candidate over baseline at p50: (key, what it is, whether a higher
# value is faster, how a side's value is shown). Times are per request, from the request
# written to a token's arrival; inter-token latency and tokens/s are of decoding only.
SPEED: tuple[tuple[str, str, bool, Callable[[float], str]], ...] = (
    ("ttft_p50", "time to first token", False, lambda v: f"{v:.3f} s"),
    ("inter_token_latency_p50", "inter-token latency", False, lambda v: f"{_ms(v)} ms"),
    ("latency_p50", "end-to-end latency", False, lambda v: f"{v:.3f} s"),
    ("tokens_per_second_p50", "output tokens/s per request", True, lambda v: f"{v:,.1f}"),
)


def _direction(ratio: float, higher_is_faster: bool) -> str:
    """Which side the candidate/baseline ``ratio`` of a figure favours, in words."""
    if f"{ratio:.2f}" == "1.00":
        return "the same"
    return "candidate faster" if (ratio > 1) == higher_is_faster else "candidate slower"


def token_sources_text(s: Summary) -> str | None:
    """Where each side's output token counts came from, in words; None when every count
    was the server's usage (vLLM's case: nothing to say)."""
    parts = []
    for side, st in s.sides.items():
        sources = st.get("token_sources") or {}
        if set(sources) <= {"usage"}:
            continue
        parts.append(f"{side}: " + ", ".join(f"{n} {_SOURCE_WORDS.get(source, source)}"
                                              for source, n in sorted(sources.items(), key=lambda kv: -kv[1])))
    if not parts:
        return None
    return "; ".join(parts) + " (usage and logprobs are exact; streamed pieces a lower bound where a server " \
                              "sends several tokens in one)"


_SOURCE_WORDS = {"usage": "from usage", "logprobs": "from the logprobs' tokens", "stream": "from streamed pieces",
                 "tokenizer": "by the server's tokenizer", "none": "not counted (no usage, logprobs or stream)"}


def speed_rows(s: Summary) -> list[dict[str, str]]:
    """Each speed figure of both sides at p50, and its candidate/baseline ratio with the
    direction in words: a ratio is never shown without saying which way is better."""
    base, cand, ratios = s.sides.get("baseline", {}), s.sides.get("candidate", {}), s.ratios
    rows = []
    for key, label, higher_is_faster, shown in SPEED:
        ratio = ratios[key]
        rows.append({
            "label": label, "key": key,
            "baseline": "—" if base.get(key) is None else shown(base[key]),
            "candidate": "—" if cand.get(key) is None else shown(cand[key]),
            "ratio": "—" if ratio is None else f"{ratio:.2f}x ({_direction(ratio, higher_is_faster)})",
        })
    return rows


def _agreement(tally: dict[str, Any] | None) -> str:
    if not tally or tally["pooled"] is None:
        return "—"
    return percent(tally.get("agreement")) if tally.get("agreement") else f"{tally['pooled'] * 100:.2f} %"


def token_agreement_lines(s: Summary) -> list[str]:
    """The teacher-forced figures (shadowdiff.triage.scoring), one sentence each."""
    t, floor = s.token_agreement, s.noise_token_agreement
    if t is None:
        return []
    lines = []
    if t["pairs"]:
        line = (f"token agreement (the candidate reading the baseline's answers, teacher-forced: the share of their "
                f"tokens that are its own top choice): {_agreement(t)} of {t['tokens']:,} tokens in {t['pairs']} pairs")
        if floor and floor["pairs"]:
            line += f"; the replica's (noise floor) {_agreement(floor)}"
        lines.append(line)
        why = unreadable(t)
        if why:
            lines.append(f"  WARNING: {why}")
        else:
            own = t["baseline_agreement"]
            lines.append(f"  the baseline reads its own answers as its top choice on {own * 100:.2f} % of their "
                         "tokens (a whole answer read at once is computed a little unlike one written token by "
                         "token, and near-ties fall either way); beyond that, the candidate disagrees on "
                         f"{points(t.get('excess_disagreement'))} of the tokens")
            if floor and floor.get("excess_disagreement"):
                lines.append(f"  the replica (noise floor) on {points(floor['excess_disagreement'])}; the candidate "
                             f"beyond the replica, on the same answers: {points(t.get('beyond_replica'))}")
        if t["kl_per_token"] is not None:
            lines.append(f"  how far the probabilities moved: KL(baseline || candidate) {per_token(t.get('kl'))} "
                         f"(from the top-{TOP_K}), the baseline token's log-probability {t['mean_drop']:+.3f} "
                         f"lower on average, {t['max_drop']:+.2f} at worst")
        if t["cascades"]:
            one = t["cascades"] == 1
            lines.append(f"  {t['cascades']} pair{'' if one else 's'} changed in substance "
                         f"{'is a cascade' if one else 'are cascades'}: the candidate agrees on "
                         f"{CASCADE_AGREEMENT:.0%} or more of the baseline's tokens, so a near-tie, not a broad "
                         "change, set the texts apart (reviewed after the others)")
    if t["unscored"]:
        lines.append(f"  {sum(t['unscored'].values())} pairs not scored: " + "; ".join(
            f"{n} {safe_text(why)}" for why, n in list(t["unscored"].items())[:3]))
    return lines


def caveats(s: Summary) -> list[str]:
    """What the figures leave out, one sentence each: lines that made no pair, pairs
    dropped or sampled, requests that made none (the terminal, and report.html's notes)."""
    lines: list[str] = []
    if same := same_target_text(s.settings):
        lines.append(same)
    if s.stored != s.pairs:
        lines.append(f"{s.stored} of them stored (every changed comparable pair; identical, sampled and failed "
                     "ones at --keep-rate): the tables below and the speed per side are over the stored pairs")
    if s.pruned:
        lines.append(f"{s.pruned} more stored pairs were deleted by retention (shadowdiff prune, serve --retain; "
                     "never reviewed ones): the counts above include them, the tables below do not")
    if s.skipped:
        lines.append(f"{len(s.skipped)} log lines skipped (see summary.json)")
    if s.dropped:
        changed = sum(n for outcome, n in s.dropped.items() if outcome in SUBSTANTIVE)
        lines.append(f"{sum(s.dropped.values())} compared pairs were dropped before reaching the store (its outage "
                     f"outlasted the proxy's queue, or the proxy stopped first); {changed} of them changed in "
                     "substance and can never be reviewed")
    if s.not_mirrored or s.not_compared.get(NotCompared.LOST):
        skipped = sum(s.not_mirrored.values())
        seen = s.pairs + sum(s.not_compared.values()) + skipped
        unseen = [f"{skipped:,} were not mirrored: " + "; ".join(
            f"{n:,} {NOT_MIRRORED_REASONS.get(why, safe_text(why))}" for why, n in sorted(s.not_mirrored.items()))
        ] if skipped else []
        # (requests a killed proxy held: never checked, whatever they would have made)
        lost = s.not_compared.get(NotCompared.LOST)
        unseen += [f"{lost:,} were {NOT_COMPARED_REASONS[NotCompared.LOST]}"] if lost else []
        lines.append(f"{s.pairs:,} of the {seen:,} chat and completions requests the proxy saw made a pair "
                     f"({s.pairs / seen:.1%}); " + "; ".join(unseen))
    if s.not_compared:
        lines.append(f"{sum(s.not_compared.values())} requests made no pair: " + "; ".join(
            f"{n} {NOT_COMPARED_REASONS.get(why, why)}" for why, n in sorted(s.not_compared.items())))
    if sampled := s.counts["sampled"]:
        lines.append(f"{sampled} pairs were sampled (temperature > 0): not comparable byte for byte, "
                     "so left out of the changed rates, the noise floor and the histogram")
    return lines


def same_target_text(settings: dict[str, Any]) -> str | None:
    """A sentence when the run's baseline and candidate were one server and model
    (``replay --allow-same-target``): its verdict is about that server's noise, not a
    candidate."""
    sides = settings.get("sides") if isinstance(settings, dict) else None
    if not isinstance(sides, dict):
        return None
    base, cand = sides.get("baseline"), sides.get("candidate")
    if not (isinstance(base, dict) and isinstance(cand, dict) and isinstance(base.get("url"), str)
            and isinstance(cand.get("url"), str)):
        return None
    if not same_target(base["url"], base.get("model"), cand["url"], cand.get("model")):
        return None
    return (f"the baseline and the candidate are the same server and model ({base['url']}): this run measures "
            "that server against itself (its noise), and its verdict says nothing about any candidate")


def counts_text(counts: dict[str, int]) -> str:
    """The run's one set of counts in words (``Summary.counts``), as every output says them."""
    compared = ", ".join(f"{counts[o]} {o}" for o in ANSWERED)
    rest = [f"{counts[key]} {words}" for key, words in (("unanswered", "unanswered (neither side reached an answer)"),
                                                          ("sampled", "sampled (not compared)"), ("errors", "errors"))
            if counts[key] or key == "errors"]
    return f"{counts['pairs']} pairs: {counts['compared']} compared ({compared}), " + ", ".join(rest)


def excess_text(excess: dict[str, Any]) -> str:
    """The excess over the noise floor, on the prompts it was measured on, in words."""
    subset = ("" if excess["pairs"] == excess["compared"]
              else f" (of {excess['compared']:,} compared: the others lack the replica's answer)")
    return (f"{excess['estimate'] * 100:+.1f} points (95 % interval {excess['low'] * 100:+.1f} to "
            f"{excess['high'] * 100:+.1f}, Newcombe's paired method) on the {excess['pairs']:,} prompts both the "
            f"candidate and the replica answered{subset}: the candidate changed "
            f"{excess['candidate_changed'] * 100:.1f} %, the replica {excess['replica_changed'] * 100:.1f} % of them")


def summary_text(s: Summary) -> str:
    """The summary as plain text (the terminal and the top of report.md)."""
    lines = [counts_text(s.counts)]
    if simulated := headline.simulated_text(s):
        lines.insert(0, simulated)
    answered = s.counts["compared"]
    of = f" of {answered} compared pairs" if answered != s.pairs else ""
    lines.append(f"candidate changed (not identical): {_pct(s.changed_rate)}{of}, in substance (near or divergent): "
                 f"{_pct(s.substantive_rate)}")
    if s.noise:
        lines.append(f"noise floor (replica vs baseline) changed: {_pct(s.noise_rate)}, in substance: "
                     f"{_pct(s.noise_substantive_rate)}")
        lines.append("noise floor outcomes: " + ", ".join(f"{s.noise.get(o, 0)} {o}" for o in OUTCOMES))
        if (excess := s.excess_divergence) is not None:
            lines.append(f"excess over the noise floor: {excess_text(excess)}")
    lines += token_agreement_lines(s)
    lines += flip_lines(s.flips)
    if "baseline" in s.sides and "candidate" in s.sides:
        lines.append("speed per request, p50 (candidate/baseline):")
        lines += [f"  {r['label']}: baseline {r['baseline']}, candidate {r['candidate']}: {r['ratio']}"
                  for r in speed_rows(s)]
        undecoded = [f"{side} {st['requests'] - st['errors'] - st['decoded']}" for side, st in s.sides.items()
                     if st["requests"] - st["errors"] > st["decoded"]]
        if undecoded:
            lines.append("  answers with no inter-token latency or tokens/s (not streamed, one token, or every "
                         "token in one read): " + ", ".join(undecoded))
        if counted := token_sources_text(s):
            lines.append(f"  output token counts: {counted}")
    if s.bench:
        lines.append(f"speed by shadowdiff bench ({s.bench['file']}: each side alone, alternated rounds), "
                     "candidate/baseline output tokens/s:")
        lines += [f"  WARNING: the bench measured other servers than this run: {other}"
                  for other in s.bench.get("other_servers") or []]
        lines += [f"  concurrency {r['concurrency']}, {r['rounds']} {'round' if r['rounds'] == 1 else 'rounds'}: "
                  f"{benchfigures.ratio_text(r, what='output tokens/s')}; latency p50 "
                  f"{benchfigures.ratio_text(r, 'latency_p50')}"
                  for r in s.bench["ratios"]]
    lines += caveats(s)
    return "\n".join(lines)


def write_reports(store: Store, run_id: str, out: Path, *, min_reviewed: float | None = None,
                  max_errors: int | None = None, min_compared: int | None = None,
                  side_by_side: int | None = SIDE_BY_SIDE, max_excess_divergence: float | None = None,
                  max_factual_rate: float | None = None, max_flips: int | None = None,
                  max_capped: float | None = None, max_token_disagreement: float | None = None,
                  min_token_agreement: float | None = None, max_kl: float | None = None,
                  bench: dict[str, Any] | None = None, without_review: int | None = None, review_url: str | None = None,
                  pairs_export: PairsExport | str = PairsExport.AUTO, compress: bool | None = None) -> ReportPaths:
    """Write every report of ``run_id`` into ``out``; ``side_by_side`` caps the pairs
    shown side by side (None: all of them); ``review_url`` is the review UI's address
    (``…/review``), for a link from each pair to its page there; ``bench``: a ``bench --out``
    file's figures (``benchfigures.read``) for this report, over those stored with the run; ``pairs_export`` and
    ``compress`` (None: beyond ``EXPORT_LIMIT`` pairs) choose the per-pair files (``Exports``).
    A gate left at None comes from the run's settings, else its default
    (``shadowdiff.verdict.gates``); one given (to ``report``: nothing else passes one)
    overrides the run's."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(store, run_id)
    summary.bench = bench if bench is not None else benchfigures.stored(summary.settings)
    if summary.bench is not None:   # (said wherever it is shown: terminal, reports, summary.json)
        summary.bench = {**summary.bench, "other_servers": benchfigures.other_servers(
            summary.bench, summary.settings.get("sides") or {})}
    gates = gating.resolve(store.run(run_id).settings, gating.given(
        min_reviewed=min_reviewed, max_errors=max_errors, min_compared=min_compared,
        max_excess_divergence=max_excess_divergence, max_factual_rate=max_factual_rate, max_flips=max_flips,
        max_capped=max_capped, max_token_disagreement=max_token_disagreement,
        min_token_agreement=min_token_agreement, max_kl=max_kl, without_review=without_review), "report")
    verdict = acceptance(store, run_id, min_reviewed=gates.value("min_reviewed"), max_errors=gates.value("max_errors"),
                         min_compared=gates.value("min_compared"), max_capped=gates.value("max_capped"),
                         without_review=bool(gates.value("without_review")))
    verdict.gate(summary.excess_divergence, gates.value("max_excess_divergence"), gates.value("max_factual_rate"))
    verdict.gate_flips(summary.flips, gates.value("max_flips"))
    verdict.gate_tokens(summary.token_agreement, gates.value("max_token_disagreement"),
                        min_agreement=gates.value("min_token_agreement"), max_kl=gates.value("max_kl"))
    measured = _measured_enough(verdict, summary) if gates.value("without_review") else True
    verdict.gates = gates.as_json()
    verdict.next_steps = next_steps(verdict, store, summary, gates.given_to("report"), measured=measured)
    exports = Exports.of(pairs_export, compress, summary.stored)
    with _staged(out, PAIRS_FILES) as staging:
        _write_all(store, run_id, staging, summary, verdict, side_by_side, review_url, exports)
    note = exports.note()
    # (for a terminal: keys, notes and reasons in it come from logs, reviewers and servers)
    return ReportPaths(out, safe_text(summary_text(summary) + ("\n" + note if note else "") + "\n" + verdict.text(),
                                      lines=True), verdict)


def _measured_enough(verdict: Acceptance, summary: Summary) -> bool:
    """``--without-review``: the decision rests on the measured gates, so one must have
    measured something: a gate given on a figure this run has. Without one it decides nothing
    (False)."""
    t = verdict.thresholds
    measured = [
        # (a replica as noisy as the candidate hides the candidate's changes: its excess measures nothing)
        *(["--max-excess-divergence"] if t.get("max_excess_divergence") is not None and summary.excess_divergence
          and not noisy_replica(summary.excess_divergence) else []),
        *([gate.flag for gate, _ in tokengates.given(t)] if (summary.token_agreement or {}).get("pairs") else []),
        # (a flip needs the baseline right: with it never right, the gate measured nothing)
        *(["--max-flips"] if t.get("max_flips") is not None and (summary.flips or {}).get("baseline_correct")
          else []),
    ]
    if not measured:
        verdict.decision = Decision.INCOMPLETE if verdict.decision is not Decision.FAIL else verdict.decision
        # (named by what this run has: a gate on a measure it lacks would decide nothing either)
        has = [*(["--max-excess-divergence (its noise floor)"] if summary.excess_divergence
                 and not noisy_replica(summary.excess_divergence) else []),
               *(["--max-token-disagreement, --min-token-agreement or --max-kl (its scored answers)"]
                 if (summary.token_agreement or {}).get("pairs") else []),
               *(["--max-flips (its graded prompts)"] if (summary.flips or {}).get("baseline_correct") else [])]
        verdict.reasons.append("--without-review decides on the measures, and no gate was given on one this run has: "
                               + (f"give {' or '.join(has)}" if has else
                                  "it has none (no --replica, no scored answers, no prompt graded right by a "
                                  "reference): replay with --replica, or with scoring on, or with reference answers"))
    else:
        verdict.warnings.append(f"decided on: {', '.join(measured)}, and --max-errors")
    return bool(measured)


def next_steps(verdict: Acceptance, store: Store, summary: Summary, again: list[str], *,
               measured: bool = True) -> list[tuple[str, str]]:
    """What to run next when the decision is INCOMPLETE: an unfinished replay's own command with
    --resume; the review UI for the unreviewed pairs; a gate a --without-review decision lacks,
    or --min-compared for a run too small to decide; then the report again, with the gates
    ``again`` given to this one, so that it decides as this one did."""
    if verdict.decision is not Decision.INCOMPLETE:
        return []
    where, run_id = shlex.quote(store.shown), summary.run_id
    report = f"shadowdiff report {where} --run {run_id}" + (" " + shlex.join(again) if again else "")
    steps: list[tuple[str, str]] = []
    resume = summary.settings.get("resume_command")
    if summary.finished_at is None and isinstance(resume, str):
        steps.append((resume, "continue the unfinished run where it stopped (its API keys, if any, given again)"))
    if verdict.unreviewed and not verdict.thresholds.get("without_review"):
        steps.append((f"shadowdiff review {where}", f"a verdict on each of the {verdict.unreviewed:,} unreviewed "
                                                   "pairs changed in substance, in the browser (the riskiest first)"))
    if not measured:
        scored = bool((summary.token_agreement or {}).get("pairs"))
        gate = ("--max-token-disagreement 0.05" if scored else "--max-excess-divergence 0.05" if summary.noise
                else None)
        if gate:
            steps.append((f"{report} {gate}", "decide on a measure this run has (0.05 is an example: set your "
                                               "own limit)"))
    min_compared = verdict.thresholds.get("min_compared")
    if verdict.compared and isinstance(min_compared, int | float) and verdict.compared < min_compared:
        steps.append((f"{report} --min-compared {verdict.compared}", f"accept the {verdict.compared:,} pairs "
                                                                      "compared as enough (or replay a longer log)"))
    if steps and not any(command == report for command, _ in steps):
        steps.append((report, "decide again" + (", with the verdicts given" if verdict.unreviewed else "")))
    return steps


@functools.cache
def _environment() -> Environment:
    """The reports' templates, compiled once a process (compiling them took longer than
    rendering a small run's report). Shared by every report: nothing may change it once
    built; what differs per report goes in at render time."""
    # report.html.j2 is HTML: model output and log text in it are escaped (report.md.j2 is not HTML)
    env = Environment(loader=PackageLoader("shadowdiff.report", "templates"),
                      autoescape=select_autoescape(["html", "html.j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=_pct, pct2=_pct2, num=_num, similarity=_similarity, ms=_ms, fenced=_fenced, code=_code,
                       cell=_cell, json_text=json_text)
    add_filters(env)
    env.globals["Outcome"] = Outcome   # the templates compare outcomes as members, as the code does
    env.globals["term"] = glossary.link
    env.globals["figure_terms"] = glossary.FIGURE_TERMS
    return env


def _write_all(store: Store, run_id: str, out: Path, summary: Summary, verdict: Acceptance,
               side_by_side: int | None, review_url: str | None, exports: Exports) -> None:
    runs = history(store, summary)
    with _open(out / "summary.json") as f:
        f.write(json_text({**summary.as_json(), "acceptance": verdict.as_json(),
                           "history": [r.as_json() for r in runs]}, indent=2) + "\n")
    _write_pairs(store, run_id, out, review_url, exports)
    env = _environment()
    changed, failed = summary.stored_changed, summary.stored_failed
    # changed pairs first, in the review queue's order, then the failed ones (which have no
    # review priority), each capped apart: a cap over both would leave the failures out
    shown = (changed, failed) if side_by_side is None else (min(changed, side_by_side), min(failed, side_by_side))
    # the list's first pair, which the page's top links to: its first changed pair, else its first failed one
    first = (next(store.pairs_by_priority(run_id, batch=1, failed=False), None) if shown[0]
             else next(store.pairs_by_priority(run_id, batch=1, failed=True), None) if shown[1] else None)
    # the identical pairs, on demand in report.html: IDENTICAL_SHOWN, or fewer if --side-by-side shows
    # fewer changed ones (each is its answer once: 200 of them add some 0.5 MB to a report)
    cap = min(IDENTICAL_SHOWN, SIDE_BY_SIDE if side_by_side is None else max(side_by_side, 1))
    same = store.identical_pairs(run_id, cap + 1)
    script, script_hash = _search_script()
    context = {"s": summary, "outcomes": OUTCOMES, "acceptance": verdict, "changed": changed, "failed": failed,
               "listed": changed + failed, "shown": shown, "speed": speed_rows(summary),
               "token_sources": token_sources_text(summary), "flip_rows": flip_rows(summary.flips),
               "figures": headline.figures(summary, verdict), "why": headline.decision_why(verdict),
               "simulated": headline.simulated_text(summary),
               "side_rows": headline.side_rows(summary), "settings_rows": headline.settings_rows(summary),
               "caveats": caveats(summary), "token_lines": token_agreement_lines(summary),
               "status_words": headline.STATUS_WORDS, "review_link": bool(review_url),
               "signal_kinds": SIGNAL_KINDS, "filter_outcomes": [o for o in OUTCOMES if o != Outcome.IDENTICAL],
               "plots": [(p, Markup(p.svg)) for p in report_plots(store, run_id, summary)],
               "first": first, "glossary": glossary.terms(), "history": runs,
               "search_script": script, "script_hash": script_hash, "identical_shown": len(same[:cap]),
               "pairs_files": exports.pairs_files,
               "export_note": None if exports.pairs_files else "The per-pair exports were not written "
                              "(<code>--pairs-export</code> writes them)."}
    for name in ("report.md", "report.html"):
        with _open(out / name) as f:
            pairs = _diffs(store, run_id, *shown, review_url, marked=name == "report.html")
            identical = _identical_views(same[:cap]) if name == "report.html" else iter(())
            for piece in env.get_template(f"{name}.j2").generate(pairs=pairs, identical=identical,
                                                                 more_identical=len(same) > cap, **context):
                f.write(piece)


def pair_link(review_url: str | None, pair: StoredPair) -> str | None:
    """The pair's page in the review UI at ``review_url`` (None without one)."""
    return f"{review_url.rstrip('/')}/pairs/{pair['id']}" if review_url else None


def signals_text(pair: StoredPair) -> str:
    """The pair's signals as one cell: "kind: reason" each, "; " between them."""
    return "; ".join(f"{s['kind']}: {s['reason']}" for s in pair["signals"] or ())


def _diffs(store: Store, run_id: str, changed: int, failed: int, review_url: str | None,
           marked: bool) -> Iterator[dict[str, Any]]:
    """The pairs shown side by side, each with what a template shows of it; ``marked``:
    with the line-aligned diff and the request's view, which report.html draws and
    report.md (each answer whole in a code block) does not."""
    pairs = itertools.chain(
        itertools.islice(store.pairs_by_priority(run_id, batch=min(200, max(1, changed)), failed=False), changed),
        itertools.islice(store.pairs_by_priority(run_id, batch=min(200, max(1, failed)), failed=True), failed))
    for pair in pairs:
        base = pair.answers.get(Side.BASELINE)
        cand = pair.answers.get(Side.CANDIDATE)
        yield {"pair": pair, "base": base, "cand": cand, "signals": pair["signals"] or [],
               "kinds": " ".join(dict.fromkeys(s["kind"] for s in pair["signals"] or ())),
               "link": pair_link(review_url, pair),
               **({"view": sides_view(base, cand), "request": request_view(pair["request"])} if marked else {})}


def _identical_views(pairs: list[StoredPair]) -> Iterator[dict[str, Any]]:
    """The identical pairs report.html shows on demand, each with its request's view and its
    answer (the baseline's: the candidate's is the same bytes)."""
    for pair in pairs:
        yield {"pair": pair, "base": pair.answers.get(Side.BASELINE), "request": request_view(pair["request"])}


@functools.cache
def _search_script() -> tuple[Markup, str]:
    """report.html's one script (the text search) and its hash for the page's
    Content-Security-Policy, which lets this script run and no other."""
    text = (importlib.resources.files("shadowdiff.report") / "templates" / "_search.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return Markup(text), Markup(f"'sha256-{digest}'")


def _write_pairs(store: Store, run_id: str, out: Path, review_url: str | None, exports: Exports) -> None:
    """The per-pair files ``exports`` asks for, streamed: one pass over the store, a pair at a time."""
    if not exports.jsonl and not exports.csv:
        return
    with contextlib.ExitStack() as files:
        def opened(name: str) -> IO[str]:
            return files.enter_context(_open_export(out / exports.name(name), exports.gzip))

        writer = None
        if exports.csv:
            writer = spreadsheet_writer(opened("pairs.csv"), CSV_COLUMNS)
            writer.writeheader()
        jsonl = opened("pairs.jsonl") if exports.jsonl else None
        texts = ((Side.BASELINE, opened("baseline.texts.json")), (Side.CANDIDATE, opened("candidate.texts.json"))) \
            if exports.jsonl else ()
        for _, f in texts:
            f.write("[")
        for i, pair in enumerate(store.pairs(run_id)):
            if writer is not None:
                writer.writerow(_csv_row(pair, review_url))
            if jsonl is not None:
                jsonl.write(json_text(_json_row(pair, review_url)) + "\n")
            sep = ",\n  " if i else "\n  "
            for side, f in texts:
                answer = pair.answers.get(side)
                f.write(sep + json_text(answer.text if answer and answer.ok else ""))
        for _, f in texts:
            f.write("\n]\n")


# A cell a spreadsheet would run as a formula (OWASP's CSV injection list): keys,
# prompts and error bodies come from logs and servers nobody vetted. The full-width
# and small forms too: a spreadsheet in an East Asian locale reads "＝1+1" as "=1+1".
FORMULA_CHARS = "=+-@\uff1d\uff0b\uff0d\uff20\ufe66\ufe62\ufe63\ufe6b"
FORMULA_START = tuple(FORMULA_CHARS)
# A separator a spreadsheet may split on (comma, semicolon in many locales, tab, a line
# break), then a formula: every cell is quoted, but a reader that splits on it regardless
# (a separator picked on import that the file does not use) starts a cell or a row there.
_SPLIT_FORMULA = re.compile(f"([,;\t\n]\\s*)(?=[{re.escape(FORMULA_CHARS)}])")


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell that a spreadsheet will not run as a formula, and whose invisible
    characters (a CR, ESC, the bidi overrides: shadowdiff.answers.invisible) are written as
    escapes, its line breaks kept: a CSV is read by people, in a spreadsheet or a
    terminal (pairs.jsonl holds every text exactly). A cell starting with a formula
    character, after any white space (a spreadsheet trims " =1+1"), or with a tab or a
    line break gets a leading ``'``, and so does a formula after a separator or a line
    break inside it (``a;'=1+1``, a list's ``'- item``)."""
    if not isinstance(value, str):
        return value
    value = _SPLIT_FORMULA.sub(r"\1'", safe_text(value, lines=True))
    return "'" + value if _runs_as_formula(value) else value


def _runs_as_formula(cell: str) -> bool:
    return cell.startswith(("\t", "\r", "\n")) or cell.lstrip().startswith(FORMULA_START)


def spreadsheet_writer(out: IO[str], columns: list[str]) -> csv.DictWriter[str]:
    """A CSV writer that quotes every cell: a comma, semicolon or line break inside a
    text never splits it, whichever separator the spreadsheet reads."""
    return csv.DictWriter(out, columns, quoting=csv.QUOTE_ALL)


def _csv_row(pair: StoredPair, review_url: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {c: pair[c] for c in _PAIR_COLUMNS}
    row["signals"], row["review_url"] = signals_text(pair), pair_link(review_url, pair)
    row["prompt"] = pair["prompt"]
    row["flip"] = pair["flip"]
    for side, answer in pair.answers.items():
        for col in ANSWER_COLUMNS:
            row[f"{side.value}_{col}"] = getattr(answer, col)
    return {k: spreadsheet_safe(v) for k, v in row.items()}


def _json_row(pair: StoredPair, review_url: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {c: pair[c] for c in _PAIR_COLUMNS}
    row["signals"], row["review_url"] = pair["signals"], pair_link(review_url, pair)
    row["prompt"] = pair["prompt"]
    row["request"] = pair["request"]
    row["score"], row["noise_score"] = pair["score"], pair["noise_score"]
    row["grade"], row["flip"] = pair["grade"], pair["flip"]   # graded against a reference (shadowdiff.verdict.flips)
    row["answers"] = {
        side.value: {"model": a.model, "text": a.text, "finish_reason": a.finish_reason,
                     "prompt_tokens": a.prompt_tokens, "completion_tokens": a.completion_tokens, "ttft": a.ttft,
                     "ttfat": a.ttfat, "duration": a.duration, "status": a.status, "error": a.error,
                     "attempts": a.attempts,
                     "reasoning": a.reasoning, "refusal": a.refusal, "tool_calls": a.tool_calls,
                     "reasoning_tokens": a.reasoning_tokens,
                     "other_choices": [asdict(c) for c in a.others] or None}
        for side, a in pair.answers.items()
    }
    return row
