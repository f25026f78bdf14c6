"""The top of a report: the decision and why, then the few figures that answer "did the
candidate change the answers beyond the noise floor, how much, and is it faster?", each
with what it is measured against and whether it passes its gate.

Each figure's ``status`` (a key of ``STATUS_WORDS``) colours it in report.html and marks it
in report.md:

- ``pass`` / ``fail`` / ``incomplete``: the figure was judged by a gate of the decision
  (``--max-excess-divergence``, ``--max-factual-rate``, ``--max-flips``, ``--min-reviewed``,
  ``--max-errors``; a factual verdict against the candidate always fails);
- ``warn``: no gate judged it, but it points at a change the reader should look at (the
  candidate surely changes more answers than the noise floor; a correct→wrong flip);
- ``info``: no gate, nothing to flag (speed, an agreement without a noise floor).

A figure never says ``pass`` for what no gate checked: a release manager reads green as
"checked and fine".
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from shadowdiff.report import benchfigures
from shadowdiff.statistics.scorestats import per_token, points, unreadable
from shadowdiff.verdict import tokengates
from shadowdiff.verdict.result import Acceptance, noisy_replica
from shadowdiff.vocabulary import Decision, Standing

# each status in words, beside the figure (colour alone is not enough to read it)
STATUS_WORDS = {"pass": "passes its gate", "fail": "fails its gate", "incomplete": "not decided yet",
                "warn": "look at this (no gate set)", "info": "no gate"}


@dataclass(frozen=True)
class Figure:
    key: str        # a stable id (report.html's element id is "figure-" + key)
    label: str
    value: str
    beside: str     # what the value is measured against: the noise floor, an interval, a bound
    status: str     # one of STATUSES
    gate: str = ""  # the gate that judged it, in words ("" when none did)


def _pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f} %"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def decision_why(verdict: Acceptance) -> str:
    """Why the decision is what it is, in one paragraph."""
    if verdict.reasons:
        return "; ".join(verdict.reasons) + "."
    if verdict.thresholds.get("without_review"):
        return (f"{verdict.compared:,} comparable pairs were answered by both sides, and every gate given on what "
                f"the run measured passes; decided without review: {verdict.unreviewed:,} of the "
                f"{verdict.needs_review:,} changed in substance were never looked at by a person.")
    reviewed = verdict.needs_review - verdict.unreviewed
    return (f"{verdict.compared:,} comparable pairs were answered by both sides; {reviewed:,} of the "
            f"{verdict.needs_review:,} changed in substance have a verdict, and none is a factual regression "
            "against the candidate.")


def figures(s: Any, verdict: Acceptance) -> list[Figure]:
    """The headline figures of a run (``s``: a ``Summary``) under its decision."""
    out = [_changed(s, verdict)]
    if (agreement := _agreement(s, verdict)) is not None:
        out.append(agreement)
    out.append(_factual(verdict))
    if (flips := _flips(s.flips, verdict)) is not None:
        out.append(flips)
    out.append(_reviewed(verdict))
    out.append(_errors(verdict))
    if (capped := _capped(verdict)) is not None:
        out.append(capped)
    if (speed := _speed(s)) is not None:
        out.append(speed)
    return out


def _changed(s: Any, verdict: Acceptance) -> Figure:
    value = f"{_pct(s.changed_rate)} of {verdict.compared:,} comparable pairs both sides answered"
    if s.substantive_rate is not None:
        value += f", {_pct(s.substantive_rate)} in substance"
    limit = verdict.thresholds.get("max_excess_divergence")
    gate = "" if limit is None else f"--max-excess-divergence {limit * 100:g} points"
    if not s.noise:
        return Figure("changed", "answers changed", value, "no noise floor: replay with --replica to measure one",
                      "incomplete" if gate else "info", gate)
    beside = f"noise floor {_pct(s.noise_rate)} (replica vs baseline)"
    excess = s.excess_divergence
    if excess is None:
        return Figure("changed", "answers changed", value, beside, "incomplete" if gate else "info", gate)
    beside += (f"; excess {_points(excess['estimate'])} points, 95 % interval {_points(excess['low'])} to "
               f"{_points(excess['high'])}, on the {excess['pairs']:,} prompts both the candidate and the replica "
               f"answered ({_pct(excess['candidate_changed'])} vs {_pct(excess['replica_changed'])} changed)")
    noisy = noisy_replica(excess)
    if noisy:
        beside += "; the replica is as noisy as the candidate or more"
    # (without a gate: a warning when the candidate surely changes more than the noise floor)
    if limit is not None:
        status = tokengates.reading(excess, limit)
    else:
        status = "warn" if excess["low"] > 0 or noisy else "info"
    return Figure("changed", "answers changed", value, beside, status, gate)


def _agreement(s: Any, verdict: Acceptance) -> Figure | None:
    t, floor = s.token_agreement, s.noise_token_agreement
    if not t or not t["pairs"] or t["pooled"] is None:
        return None
    value = f"{_pct(t['pooled'], 2)} of {t['tokens']:,} tokens"
    if (agreement := t.get("agreement")) and agreement.get("low") is not None:
        value += f" (95 % interval {_pct(agreement['low'], 2)} to {_pct(min(agreement['high'], 1.0), 2)})"
    gates = tokengates.given(verdict.thresholds)
    gate = "; ".join(g.text(limit) for g, limit in gates)
    why = unreadable(t)
    if why:
        return Figure("token-agreement", "token agreement (teacher-forced)", value, why,
                      "incomplete" if gates else "warn", gate)
    # read against the baseline's own agreement with its answers, never alone (scorestats)
    excess = t.get("excess_disagreement")
    beside = (f"the baseline's own {_pct(t['baseline_agreement'], 2)}; the candidate disagrees beyond it on "
              f"{points(excess)}")
    beyond = None
    if floor and floor.get("excess_disagreement"):
        beyond = t.get("beyond_replica")
        beside += (f"; noise floor (the replica) {points(floor['excess_disagreement'])}, the candidate beyond the "
                   f"replica {points(beyond)}")
    else:
        beside += "; no noise floor (no replica scored)"
    if t.get("kl") is not None:
        beside += f"; KL {per_token(t['kl'])}"
    if gates:
        status = tokengates.status(t, gates)
    else:
        # (without a gate: a warning when the candidate surely departs beyond the noise floor,
        # or beyond the baseline's own reading where there is no replica)
        surely = beyond if beyond is not None else excess
        status = "warn" if surely and surely.get("low") is not None and surely["low"] > 0 else "info"
    return Figure("token-agreement", "token agreement (teacher-forced)", value, beside, status, gate)


def _factual(verdict: Acceptance) -> Figure:
    k = verdict.verdicts.get(Standing.FACTUAL, 0)
    bound = verdict.factual_rate_upper
    limit = verdict.thresholds.get("max_factual_rate")
    gate = "zero allowed" + ("" if limit is None else f"; --max-factual-rate {limit * 100:g} %")
    if bound is None:
        beside = "no pair reviewed yet: nothing bounds the rate"
    else:
        beside = f"rate up to {_pct(bound['upper'])} (95 %, exact) from {bound['reviewed']:,} reviewed"
    if bound is None and not k and verdict.thresholds.get("without_review"):
        # (decided without reviews: a 0 nobody looked for is no pass, and is not shown as one)
        return Figure("factual", "factual regressions", "— (no pair reviewed)", beside + "; not checked "
                      "(--without-review decides on the measures)", "warn" if verdict.unreviewed else "info", "")
    if k:
        status = "fail"
    elif not _reviewed_enough(verdict) or (limit is not None and (bound is None or bound["upper"] > limit)):
        status = "incomplete"
    else:
        status = "pass"
    return Figure("factual", "factual regressions", f"{k}", beside, status, gate)


def _flips(flips: dict[str, Any] | None, verdict: Acceptance) -> Figure | None:
    if not flips:
        return None
    limit = verdict.thresholds.get("max_flips")
    gate = "" if limit is None else f"--max-flips {limit}"
    if not flips["graded"]:
        return Figure("flips", "correct→wrong flips", "—", f"{flips['references']} pairs had a reference; none "
                      "was graded on both sides", "incomplete" if gate else "warn", gate)
    value = f"{flips['correct_to_wrong']} correct→wrong, {flips['wrong_to_correct']} wrong→correct"
    beside = f"of {flips['graded']:,} graded; McNemar's exact p = {flips['mcnemar_p']:.3g}"
    if noise := flips.get("noise"):
        beside += f"; noise floor {noise['correct_to_wrong']} correct→wrong"
    if not flips["baseline_correct"] and not flips["candidate_correct"]:   # (no flip could be seen)
        return Figure("flips", "flips by reference answers", "not measured", f"of {flips['graded']:,} graded, "
                      "neither side matched any reference: check the grader and the references",
                      "incomplete" if gate else "warn", gate)
    if limit is not None:
        status = ("fail" if flips["correct_to_wrong"] > limit
                  else "incomplete" if flips["ungradable_answers"] or not flips["baseline_correct"] else "pass")
    else:
        status = "warn" if flips["correct_to_wrong"] else "info"
    return Figure("flips", "flips by reference answers", value, beside, status, gate)


def _reviewed_enough(verdict: Acceptance) -> bool:
    """Whether --min-reviewed is met (what the decision checked the reviews against); a
    decision --without-review asked for none."""
    if verdict.thresholds.get("without_review"):
        return True
    need = verdict.needs_review
    return not need or (need - verdict.unreviewed) / need >= verdict.thresholds.get("min_reviewed", 1.0)


def _reviewed(verdict: Acceptance) -> Figure:
    need = verdict.needs_review
    done = need - verdict.unreviewed
    required = verdict.thresholds.get("min_reviewed", 1.0)
    value = f"{done:,} of {need:,}"
    beside = f"{_pct(done / need if need else 1.0, 0)} of the pairs changed in substance have a verdict"
    if verdict.thresholds.get("without_review"):   # (not asked: said, in amber, never green)
        return Figure("reviewed", "reviewed", value, beside + "; not asked for (--without-review)",
                      "warn" if verdict.unreviewed else "info", "")   # (no gate judged it: none is named)
    # (nothing compared: a gate that checked nothing is never green)
    status = "pass" if _reviewed_enough(verdict) and verdict.compared else "incomplete"
    return Figure("reviewed", "reviewed", value, beside, status, f"--min-reviewed {required * 100:g} %")


def _errors(verdict: Acceptance) -> Figure:
    allowed = int(verdict.thresholds.get("max_errors", 0))
    value = ", ".join([f"{verdict.errors:,} failed pairs"] + [f"{n:,} {what}" for n, what in (
        (verdict.skipped, "skipped lines"), (verdict.unanswered, "unanswered pairs"),
        (verdict.replica_errors, "replica failures")) if n])
    status = "pass" if verdict.unchecked <= allowed else "incomplete"
    return Figure("errors", "errors", value, f"of {verdict.pairs:,} pairs made", status, f"--max-errors {allowed}")


def _capped(verdict: Acceptance) -> Figure | None:
    text = verdict.capped_text()
    if text is None:
        return None
    limit = verdict.thresholds.get("max_capped", 1.0)
    status = "pass" if verdict.capped["share"] <= limit else "incomplete"
    return Figure("capped", "cut by the token cap", _pct(verdict.capped["share"]), text, status,
                  f"--max-capped {limit * 100:g} %")


def _speed(s: Any) -> Figure | None:
    bench = getattr(s, "bench", None)
    own = _own_speed(s)
    if bench:
        return _benched(s, bench, own)
    if own is None:
        return None
    value, beside = own
    return Figure("speed", "speed (candidate/baseline, p50)", value, f"{beside}; {_load(s)}; {BENCH_ADVICE}", "info")


def _own_speed(s: Any) -> tuple[str, str] | None:
    """The run's own speed figure and what is beside it (None when it measured none)."""
    ratios = s.ratios
    if all(r is None for r in ratios.values()):
        return None

    def ratio(key: str) -> str:
        return "—" if ratios[key] is None else f"{ratios[key]:.2f}x"

    if ratios["tokens_per_second_p50"] is not None:
        return (f"{ratio('tokens_per_second_p50')} output tokens/s",
                f"TTFT {ratio('ttft_p50')}, end-to-end latency {ratio('latency_p50')} (below 1: faster)")
    # no decoding pace (answers not streamed): the times alone
    return (f"{ratio('latency_p50')} end-to-end latency",
            f"TTFT {ratio('ttft_p50')} (below 1: faster); no output tokens/s: no answer's tokens arrived apart "
            "(not streamed, one token, or every token in one read)")


def _benched(s: Any, bench: dict[str, Any], own: tuple[str, str] | None) -> Figure:
    """The speed figure from ``shadowdiff bench`` (``benchfigures``), the run's own beside it."""
    levels = bench["ratios"]
    several = len(levels) > 1
    value = "; ".join(benchfigures.ratio_text(r, what="output tokens/s") + (
        f" at concurrency {r['concurrency']}" if several else "") for r in levels)
    times = "; ".join((f"concurrency {r['concurrency']}: " if several else "")
                      + f"TTFT {benchfigures.ratio_text(r, 'ttft_p50')}, latency "
                      f"{benchfigures.ratio_text(r, 'latency_p50')}" for r in levels)
    rounds = levels[0]["rounds"]
    beside = (f"shadowdiff bench ({bench['file']}): each side alone, {rounds} alternated "
              f"{'round' if rounds == 1 else 'rounds'}"
              + ("" if several else f", concurrency {levels[0]['concurrency']}") + f"; {times} (below 1: faster)")
    if own is not None:
        beside += f". This run's own: {own[0]}, {_load(s)}"
    elsewhere = bench.get("other_servers") or []
    if elsewhere:
        beside += ". The bench measured other servers than this run: " + "; ".join(elsewhere)
    return Figure("speed", "speed (candidate/baseline, bench)", value, beside, "warn" if elsewhere else "info")


BENCH_ADVICE = ("for a speed decision, `shadowdiff bench` measures each side alone, in alternated rounds, "
                "with an interval (give its file to replay or report with --bench)")


def _load(s: Any) -> str:
    """What the speed figures were measured under: a replay's or a proxy's own load is not a benchmark's."""
    if s.kind == "replay":
        concurrency = s.settings.get("concurrency")
        at_once = ("one prompt at a time" if concurrency == 1 else f"up to {concurrency} prompts at a time"
                   if concurrency else "several prompts at a time")
        return f"measured under the replay's own load ({at_once}, both sides asked at once; {_hosts(s)})"
    if s.kind == "serve":
        return "measured under the live traffic mirrored, as it came"
    return "measured under the run's own load"


def _hosts(s: Any) -> str:
    """Whether the sides' servers share a host, as far as their addresses tell."""
    sides = s.settings.get("sides") or {}
    hosts = {}
    for side, info in sides.items():
        url = info.get("url") if isinstance(info, dict) else info
        if isinstance(url, str):
            with contextlib.suppress(ValueError):
                hosts[side] = benchfigures.host(url)
    names = set(hosts.values())
    if len(hosts) > 1 and len(names) == 1:
        every = "both servers" if len(hosts) == 2 else f"all {len(hosts)} servers"
        return f"{every} at one host, {next(iter(names))}, so each side's requests slowed the other's"
    return "servers at different hosts, which may still share a machine"


def decision_class(decision: Decision) -> str:
    return decision.name.lower()


def side_rows(s: Any) -> list[dict[str, str]]:
    """Each side of the run: where it was, which model, which engine version."""
    sides = s.settings.get("sides") or {}
    versions = s.settings.get("versions") or {}
    fake = set(s.settings.get("simulated") or ())
    rows = []
    for side, info in sides.items():
        info = info if isinstance(info, dict) else {"url": info}
        version = versions.get(side) if side in versions else None
        shown = (str(version) if version else "unknown (no /version)") if side in versions else "—"
        rows.append({"side": str(side), "url": str(info.get("url") or "—"), "model": str(info.get("model") or "—"),
                     "version": f"shadowdiff simulate (a test double), posing as vLLM {shown}" if side in fake
                     else shown})
    return rows


def settings_rows(s: Any) -> list[tuple[str, str]]:
    """The run's recorded settings but its sides, as (name, value) rows: nested settings
    by dotted name, so a table shows them without a JSON dump to read."""
    rows: list[tuple[str, str]] = []

    def add(name: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                add(f"{name}.{key}", inner)
        elif isinstance(value, str):
            rows.append((name, value))
        else:
            rows.append((name, json.dumps(value, ensure_ascii=False)))

    for key, value in s.settings.items():
        if key not in ("sides", "versions", "labels", benchfigures.SETTINGS_KEY):
            add(str(key), value)
    return rows


def simulated_text(s: Any) -> str | None:
    """What a run against shadowdiff's simulator must say first: that no model answered."""
    fake = list(s.settings.get("simulated") or ())
    if not fake:
        return None
    return (f"SIMULATED: the {' and the '.join(fake)} {'is' if len(fake) == 1 else 'are'} `shadowdiff simulate`, a "
            "test double: its answers are synthetic text and its speed a setting, so these figures measure no model")
