"""``shadowdiff replay``, ``compare``, ``bench`` and ``demo``: the commands of the replay mode."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import shlex
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from shadowdiff.answers.invisible import safe_text
from shadowdiff.answers.targets import same_target
from shadowdiff.commands.options import (
    NoDecisionUsage,
    NumberOr,
    allow_same_target_option,
    bench_option,
    confidence_gate_options,
    decision_gate_options,
    extra_body_option,
    flip_gate_option,
    gate_option,
    note,
    out_dir_option,
    parse_extra_body,
    parse_labels,
    review_url_option,
    side_by_side_option,
    side_options,
    threshold_options,
    timeout_option,
    token_gate_options,
)
from shadowdiff.commands.outputs import tell
from shadowdiff.errors import INTERRUPTED, ConfigError, InputError, ShadowdiffError
from shadowdiff.replay import logs
from shadowdiff.report import SIDE_BY_SIDE, benchfigures
from shadowdiff.triage.grading import Grader
from shadowdiff.verdict import gates as gating
from shadowdiff.vocabulary import Decision, Side

# What runs a command is imported when it runs (in the functions below), not here: ``--help``
# and the other commands load no HTTP client, store, SQLAlchemy or report writer.
if TYPE_CHECKING:
    from tqdm import tqdm

    from shadowdiff.replay.runner import ReplaySettings, Tally
    from shadowdiff.store import Store
    from shadowdiff.verdict.result import Acceptance


def _progress(total: int) -> tuple[tqdm[Any], Any]:
    from tqdm import tqdm

    # Off a terminal (CI logs) redraw rarely; tqdm throttles its own updates.
    bar = tqdm(total=total, unit="pair", dynamic_ncols=True, file=sys.stderr, smoothing=0.1,
               mininterval=0.2 if sys.stderr.isatty() else 10.0)

    def update(tally: Tally) -> None:
        outcomes = " ".join(f"{k}={v}" for k, v in sorted(tally.outcomes.items()))
        bar.set_postfix_str(f"{outcomes} errors={tally.errors} skipped={tally.skipped}", refresh=False)
        bar.update(tally.done + tally.resumed + tally.skipped - bar.n)

    return bar, update


class _ReplayCommand(click.Command):
    """``replay``, keeping its arguments as given: an interrupted run prints the command
    that continues it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if "--gate" in ctx.meta[_ARGV]:   # click's 2 would read as INCOMPLETE: a bad option decides nothing
                raise NoDecisionUsage(exc.format_message(), exc.ctx) from exc
            raise


_ARGV = "shadowdiff.replay.argv"


class Interrupted(KeyboardInterrupt):
    """Ctrl+C once the run was made: its pairs are stored, and it stays unfinished."""

    def __init__(self, done: int) -> None:
        super().__init__(done)
        self.done = done


class ReportsUnwritten(KeyboardInterrupt):
    """Ctrl+C once every pair was stored and the run finished: only its reports are missing."""

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.out = out


def _resume_command(ctx: click.Context) -> str:
    """The command that continues the run, its API keys and URL passwords left out (it goes
    to a terminal, and so to CI logs): each as ``…``, to be given again (or from
    SHADOWDIFF_API_KEY)."""
    argv, shown = ctx.meta.get(_ARGV, []), []
    for i, arg in enumerate(argv):
        name = arg.split("=", 1)[0]
        if name.endswith("api-key"):
            shown.append(f"{name}=…" if "=" in arg else arg)
        elif i and argv[i - 1].endswith("api-key"):
            shown.append("…")
        else:   # (a password in a URL - the store's, a side's - is left out the same way)
            shown.append(re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1…@", arg))
    return shlex.join([*ctx.command_path.split(), *shown, *([] if "--resume" in argv else ["--resume"])])


@click.command("replay", cls=_ReplayCommand)
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@side_options(source="the log's", replica=True, example=True)
@out_dir_option(help="Directory for the store (shadowdiff.sqlite) and the reports.")
@click.option("--store", default=None, help="Store location, if not the --out directory (e.g. postgresql://…).")
@click.option("--resume", is_flag=True, help="Continue the last replay run in the store.")
@click.option("--format", "fmt", type=click.Choice([f.value for f in logs.LogFormat]), default=None,
              help="The log's format (default: detected).")
@click.option("--turn", default=1, show_default=True,
              help="Which turn of question logs to compare; for N > 1 the baseline first answers turns 1..N-1 and "
                   "both sides get that same conversation.")
@click.option("--endpoint", type=click.Choice(["chat", "completions"]), default="chat", show_default=True,
              help="Where plain prompts (text, JSON array, questions) are sent.")
@click.option("--concurrency", default=8, show_default=True, help="Requests in flight per side.")
@click.option("--temperature", type=NumberOr(float), default="0", show_default=True,
              help="Temperature for every request, or 'keep'.")
@click.option("--max-tokens", type=NumberOr(int), default="256", show_default=True,
              help="Output token cap for every request, or 'keep'.")
@click.option("--stream/--no-stream", default=True, show_default=True, help="Stream answers (with usage).")
@click.option("--logprobs", default=2, show_default=True, type=click.IntRange(0, 20),
              help="Top logprobs to ask for (token-level divergence and margins); 0 to ask for none.")
@threshold_options
@timeout_option
# what shadowdiff.answers.client retries (RETRY_STATUSES and transport failures); a test holds the two together
@click.option("--retries", default=3, show_default=True, type=click.IntRange(min=0),
              help="Retries of HTTP 429, 502, 503 and 504, timeouts, connection failures and streams cut short, "
                   "with backoff and Retry-After; then the answer is an error.")
@click.option("--strict", is_flag=True, help="Stop at the first malformed log line instead of skipping it.")
@click.option("--label", multiple=True, metavar="KEY=VALUE",
              help="Recorded with the run: the conditions that move the noise floor (gpu=H100, batch_invariant=1...).")
@click.option("--redact", multiple=True, metavar="REGEX",
              help="A regular expression redacted from the stored prompts and requests (repeatable; the requests "
                   "are sent as logged).")
@gate_option("the run could not be made")
@click.option("--score/--no-score", default=True, show_default=True,
              help="Teacher-forced scoring: each greedy pair's baseline answer read token by token by the "
                   "candidate (and the replica, and the baseline itself): token agreement, log-probability drops, "
                   "KL. Costs a prefill per side per pair; servers that cannot score are said so once.")
@click.option("--references", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Reference answers by record id (JSONL: id, custom_id or question_id, and reference, optional "
                   "grader; or MT-Bench's reference answers): each side's answer is graded, and pairs that flip "
                   "(one side right, the other wrong) go first in the review queue. A reference here wins over "
                   "the log's.")
@click.option("--grader", type=click.Choice([g.value for g in Grader]), default=None,
              help="The grader of references that name none (default: number for a number, choice for an option "
                   "letter, else exact).")
@extra_body_option
@allow_same_target_option
@decision_gate_options
@confidence_gate_options
@flip_gate_option
@token_gate_options
@bench_option
@side_by_side_option
@review_url_option
def replay(log: Path, baseline: str, candidate: str, replica: str | None, baseline_model: str | None,
           candidate_model: str | None, replica_model: str | None, api_key: str | None, out: Path,
           store: str | None, resume: bool, fmt: str | None, turn: int, endpoint: str, concurrency: int,
           temperature: float | None, max_tokens: int | None, stream: bool, logprobs: int, near: float,
           difflib_limit: int, timeout: float, retries: int, strict: bool, label: tuple[str, ...],
           redact: tuple[str, ...], extra_body: tuple[str, ...], max_excess_divergence: float | None,
           max_factual_rate: float | None, side_by_side: int | None, gate: bool, score: bool,
           references: Path | None, grader: str | None, max_flips: int | None, review_url: str | None,
           min_reviewed: float | None, max_errors: int | None, min_compared: int | None, max_capped: float | None,
           max_token_disagreement: float | None, min_token_agreement: float | None,
           max_kl: float | None, bench: Path | None, without_review: bool | None, allow_same_target: bool) -> None:
    """Replay a prompt log against a baseline and a candidate, and compare every answer.

    Exits 0 once the run is made and something was compared, 1 if nothing could be
    compared (every request failed, every line skipped) or the run could not be made;
    with --gate, with the verdict's code instead (see `shadowdiff report`). The gates
    given (--max-flips, --min-reviewed...) are stored with the run, and `shadowdiff
    report` applies them too. Ctrl+C keeps
    the pairs made, leaves the run unfinished, prints the command that continues it
    (--resume) and exits 130."""
    from sqlalchemy.exc import DatabaseError

    from shadowdiff.answers.client import RetryPolicy, Upstream
    from shadowdiff.answers.compare import Thresholds
    from shadowdiff.replay.runner import Overrides, ReplaySettings

    try:
        settings = ReplaySettings(
            log=log,
            baseline=Upstream(Side.BASELINE, baseline, baseline_model, api_key),
            candidate=Upstream(Side.CANDIDATE, candidate, candidate_model, api_key),
            replica=Upstream(Side.REPLICA, replica, replica_model or baseline_model, api_key) if replica else None,
            fmt=logs.LogFormat(fmt) if fmt else None, turn=turn,
            endpoint=logs.CHAT if endpoint == "chat" else logs.COMPLETIONS, concurrency=concurrency,
            overrides=Overrides(temperature, max_tokens, stream, logprobs, parse_extra_body(extra_body)),
            thresholds=Thresholds(near=near, difflib_limit=difflib_limit), strict=strict, timeout=timeout,
            retry=RetryPolicy(attempts=retries + 1), redact=redact, labels=parse_labels(label), score=score,
            references=references, grader=Grader(grader) if grader else None,
        )
        if not score and any(g is not None for g in (max_token_disagreement, min_token_agreement, max_kl)):
            raise ConfigError("--max-token-disagreement, --min-token-agreement and --max-kl read the answers' "
                              "teacher-forced scores, which --no-score leaves out: drop one or the other")
        given = gating.given(min_reviewed=min_reviewed, max_errors=max_errors, min_compared=min_compared,
                             max_excess_divergence=max_excess_divergence, max_factual_rate=max_factual_rate,
                             max_flips=max_flips, max_capped=max_capped,
                             max_token_disagreement=max_token_disagreement,
                             min_token_agreement=min_token_agreement, max_kl=max_kl,
                             without_review=gating.switch(without_review))
        verdict = run_replay(settings, out, store, resume, side_by_side=side_by_side, gates=given,
                             review_url=review_url, allow_same_target=allow_same_target,
                             bench=benchfigures.read(bench) if bench else None,
                             resume_command=_resume_command(click.get_current_context()))
    except Interrupted as stopped:
        tell(f"interrupted: {stopped.done} {'more ' if resume else ''}pair{'' if stopped.done == 1 else 's'} stored; "
             f"the run is unfinished (report: INCOMPLETE). Continue it with:\n  "
             f"{_resume_command(click.get_current_context())}")
        raise SystemExit(INTERRUPTED) from None
    except ReportsUnwritten as stopped:
        tell(f"interrupted while the reports were written: every pair is stored and the run finished; "
             f"write them with:\n  shadowdiff report {shlex.quote(str(stopped.out))}")
        raise SystemExit(INTERRUPTED) from None
    except KeyboardInterrupt:
        click.echo("interrupted before the run began: nothing was stored", err=True)
        raise SystemExit(INTERRUPTED) from None
    except DatabaseError as exc:     # the store failed for longer than the writer waits (a minute)
        first = str(exc.orig or exc).splitlines()[0][:300]
        click.echo(f"error: the store failed and did not come back within a minute ({first}); the run is "
                   f"unfinished (report: INCOMPLETE). Once the store is back, continue it with:\n  "
                   f"{_resume_command(click.get_current_context())}", err=True)
        # with --gate: INCOMPLETE, as `report` says of the unfinished run (1 would read as FAIL)
        raise SystemExit(int(Decision.INCOMPLETE) if gate else 1) from None
    except LeftUnfinished as exc:
        raise (_Incomplete if gate else click.ClickException)(str(exc)) from exc
    except ShadowdiffError as exc:
        raise (_NoDecision if gate else click.ClickException)(str(exc)) from exc
    if gate:
        raise SystemExit(int(verdict.decision))
    if not verdict.compared:
        raise click.ClickException("nothing could be compared: no comparable pair was answered by both sides "
                                   "(see the errors and skipped lines above)")


class _NoDecision(click.ClickException):
    """With --gate, a replay that could not be made decides nothing: 3, as ``report``."""

    exit_code = 3


class LeftUnfinished(InputError):
    """The log could not be read on (bytes not UTF-8, a JSON array that breaks, a bad line
    under --strict) after the run was made: its pairs are stored and it stays unfinished."""


class _Incomplete(click.ClickException):
    """With --gate, a run made and left unfinished is INCOMPLETE: 2, what ``report`` says
    of it afterwards (3 would say that no run was made)."""

    exit_code = 2


def run_replay(settings: ReplaySettings, out: Path, store_location: str | None, resume: bool, *,
               side_by_side: int | None = SIDE_BY_SIDE, gates: Mapping[str, Any] | None = None,
               review_url: str | None = None, allow_same_target: bool = False,
               bench: dict[str, Any] | None = None, resume_command: str | None = None) -> Acceptance:
    """Run a replay (new, or resumed) and write its reports; returns the run's verdict.
    ``gates``: the gates given (``shadowdiff.verdict.gates.given``), stored with the run so that
    ``report`` decides with them too; ``bench``: a bench file's figures
    (``shadowdiff.report.benchfigures.read``), stored with the run for its reports' speed figure;
    ``resume_command``: the command that continues the run, stored with it (a report of it
    unfinished names it) and said by a second Ctrl+C."""
    from shadowdiff.answers.redact import without_queries
    from shadowdiff.replay.preflight import check_sides
    from shadowdiff.replay.references import Grading, read_references
    from shadowdiff.replay.runner import Replay
    from shadowdiff.report.write import write_reports
    from shadowdiff.store import STORE_FILE, Store
    from shadowdiff.verdict.acceptance import STOPPED_BY_LOG

    fmt = settings.fmt or logs.detect(settings.log)
    note(f"{settings.log}: read as {logs.FORMAT_WORDS[fmt]}"
         + (" (--format given)" if settings.fmt else " (detected; --format to choose another)"))
    logs.check_turn(fmt, settings.turn, settings.endpoint)
    # read whole before anything is sent or stored: a bad line stops the run before it starts
    grading = Grading(settings.grader, read_references(settings.references, settings.turn, settings.grader),
                      settings.references) if settings.references else Grading(settings.grader)
    settings = check_sides(settings, fmt, warn=note)
    _check_targets(settings, allow_same_target)
    if settings.replica is None:
        note("no --replica, so no noise floor: without one, differences that batching alone causes are "
              "blamed on the candidate")
    # --out is a directory whatever its name (results.v2, results.db): its store is a file in it
    store = Store.open(store_location or out / STORE_FILE)
    interrupt = signal.getsignal(signal.SIGINT)   # (a Ctrl+C makes a second one exit at once: until the end)
    try:
        run_id = _run_for(store, settings, fmt, resume)
        _record_gates(store, run_id, gates or {})
        if resume_command is not None:
            # (kept with the run and shown in its reports, which are shared: a query string, a
            # database URL's ?password= among them, is cut as in every stored error text)
            store.set_run_setting(run_id, "resume_command", without_queries(resume_command))
        if bench is not None:
            before = store.run(run_id).settings.get(benchfigures.SETTINGS_KEY)
            if resume and before and before != bench:
                note(f"--resume: the run's bench figures change from {before.get('file')} to {bench['file']}")
            store.set_run_setting(run_id, benchfigures.SETTINGS_KEY, bench)
        try:
            total = logs.count(settings.log, fmt)
        except KeyboardInterrupt:   # (the run is begun, with no pair of this part yet)
            raise Interrupted(0) from None
        bar, update = _progress(total)
        # notices on stderr with the bar (tqdm.write's default is stdout, where the summary goes)
        runner = Replay(settings, store, run_id, resume=resume, listener=update,
                        warn=lambda message: bar.write(safe_text(message), file=sys.stderr), grading=grading,
                        resume_command=resume_command)
        try:
            tally = asyncio.run(runner.run(fmt))
        except (KeyboardInterrupt, asyncio.CancelledError):
            # the pairs made before the signal are stored (the runner dropped those in flight, and
            # stored nothing after it); the run stays unfinished, for --resume
            raise Interrupted(runner.tally.done) from None
        except InputError as exc:   # a log that breaks part-way, or --strict
            store.set_run_setting(run_id, STOPPED_BY_LOG, str(exc))   # for report: what to do is not --resume
            raise LeftUnfinished(f"{exc}; the {runner.tally.done} pairs made before it are kept and the run is "
                                 "left unfinished (INCOMPLETE): fix the log and replay it as a new run, without "
                                 "--resume (a resume refuses a log whose contents changed)") from exc
        finally:
            bar.close()
        _check_log_kept(store, run_id, settings.log)
        store.finish_run(run_id)
        # the gates given are the run's now (_record_gates): decided from the run, as report
        # will, so that a report made again from the store is the same, byte for byte
        try:
            paths = write_reports(store, run_id, out, side_by_side=side_by_side, review_url=review_url)
        except KeyboardInterrupt:
            raise ReportsUnwritten(out) from None
        click.echo(_closing_line(tally), err=True)
        if not paths.acceptance.compared:   # say why here, not only in the reports
            for side, error in _first_errors(store, run_id).items():
                click.echo(f"{side.value}'s first error: {safe_text(error)}", err=True)
        click.echo(paths.summary_text)
        click.echo(f"\nreport: {paths.html}")
        return paths.acceptance
    except KeyboardInterrupt:
        # (the handler the runner left stays: a second Ctrl+C while the command says how to resume
        # exits at once, 130, saying it too, instead of a KeyboardInterrupt out of the message)
        interrupt = None
        raise
    finally:
        store.close()
        if interrupt is not None:
            with contextlib.suppress(ValueError):   # (not the main thread: nothing was set)
                signal.signal(signal.SIGINT, interrupt)


def _check_targets(settings: ReplaySettings, allow_same_target: bool) -> None:
    """Refuse the baseline as its own candidate (one address and model, once each side's
    model is settled): every pair would agree, and the run would PASS on no evidence about
    any candidate. --allow-same-target lets it through, to measure a server's noise."""
    from shadowdiff.answers.redact import public_url
    base, cand, replica = settings.baseline, settings.candidate, settings.replica
    if allow_same_target:
        return
    if same_target(base.url, base.model, cand.url, cand.model):
        model = f" ({base.model})" if base.model else ""
        raise ConfigError(f"the baseline and the candidate are the same server and model: "
                          f"{public_url(base.url)}{model}; give "
                          "the candidate's own address (or --candidate-model), or --allow-same-target to measure "
                          "the server against itself (its noise)")
    if replica is not None and same_target(replica.url, replica.model, cand.url, cand.model):
        # the noise floor would be the candidate's own changes: any excess over it is zero
        model = f" ({cand.model})" if cand.model else ""
        raise ConfigError(f"the replica and the candidate are the same server and model: "
                          f"{public_url(cand.url)}{model}; the "
                          "replica is a second baseline (the baseline's configuration on another server or "
                          "process), whose changes are the noise floor the candidate is measured against")


def _record_gates(store: Store, run_id: str, given: Mapping[str, Any], command: str = "replay") -> None:
    """Store the gates given with the run (over those of an earlier part of it, on
    --resume), so that ``report`` on the run decides as ``replay --gate`` did."""
    run = store.run(run_id)
    record = gating.to_store(run.settings, given, command)
    before, _ = gating.stored(run.settings)
    if before and before != record["given"]:
        note(f"--resume: the run's gates change from {_flags(before)} to {_flags(record['given'])} (a gate not "
             "given now is kept from before)")
    store.set_run_setting(run_id, gating.SETTINGS_KEY, record)


def _flags(values: Mapping[str, Any]) -> str:
    return " ".join(f"{gating.BY_NAME[n].flag} {gating.BY_NAME[n].show(v)}" for n, v in values.items()) or "none"


def _first_errors(store: Store, run_id: str, look: int = 100) -> dict[Side, str]:
    """The first error of each side among the run's first ``look`` pairs."""
    errors: dict[Side, str] = {}
    for pair in itertools.islice(store.pairs(run_id), look):
        for side, answer in pair.answers.items():
            if answer.error and side not in errors:
                errors[side] = answer.error[:500]
    return errors


# What must not change between a run and its --resume (recorded settings' keys).
# (``score``: a run half scored would sum up its token agreement over the pairs that
# happened to come before the resume, and say nothing of the rest)
_SAME_ON_RESUME = ("endpoint", "sides", "overrides", "thresholds", "redact", "grading", "score")


def _run_for(store: Store, settings: ReplaySettings, fmt: logs.LogFormat, resume: bool) -> str:
    recorded = settings.recorded(fmt)
    if resume:
        last = store.latest_run("replay")
        if last is not None:
            if (last.settings.get("log"), last.settings.get("format"), last.settings.get("turn")) != (
                    recorded["log"], recorded["format"], recorded["turn"]):
                raise ShadowdiffError(
                    f"--resume: the last run in this store replayed {last.settings.get('log')} "
                    f"({last.settings.get('format')}, turn {last.settings.get('turn')}); "
                    "resume needs the same log, format and turn")
            _check_log_unchanged(settings.log, last.settings)
            # Pairs made under other sides or settings would be mixed into one run silently.
            changed = [key for key in _SAME_ON_RESUME
                       if key in last.settings and _as_now(key, last.settings[key]) != recorded[key]]
            if changed:
                named = [_OPTIONS_OF.get(key, key) for key in changed]
                raise ShadowdiffError(f"--resume: {', '.join(named)} differ from the run being resumed; resume "
                                      "with the same options, or start a new run without --resume")
            for key in ("versions", "labels"):
                if last.settings.get(key, recorded[key]) != recorded[key]:
                    note(f"--resume: {key} changed since the run began: {last.settings.get(key)} then, "
                          f"{recorded[key]} now (the run keeps the first)")
            store.finish_run(last.id, finished=False)   # open until this resume, too, has finished
            return last.id
        click.echo("--resume: no earlier run in this store; starting a new one", err=True)
    elif store.latest_run("replay") is not None:
        click.echo("this store already holds a run; starting a new one (--resume continues the last)", err=True)
    return store.create_run("replay", {**recorded, _FINGERPRINT: logs.fingerprint(settings.log).as_json()})


# The recorded settings' key of the log's fingerprint (``logs.fingerprint``), taken when the run began.
_FINGERPRINT = "log_fingerprint"


def _check_log_unchanged(log: Path, recorded: dict[str, Any]) -> None:
    """A ``ShadowdiffError`` unless the log holds the bytes it held when the run began.

    A resume skips the lines whose ids are stored: in a log rewritten in place, an id may
    now stand for another prompt, or a line never replayed may have moved behind one that
    was, and the run would PASS on answers to a log nobody replays. A run begun before
    fingerprints were recorded cannot be checked, so it is not resumed either."""
    then = logs.Fingerprint.from_json(recorded.get(_FINGERPRINT))
    if then is None:
        raise ShadowdiffError(f"--resume: the run being resumed recorded no fingerprint of {log} (an earlier "
                              "shadowdiff began it), so whether the log changed since cannot be checked; start a "
                              "new run without --resume")
    change = logs.change_since(log, then)
    if change is not None:
        raise ShadowdiffError(f"--resume: {log} is not the log the run began with: {change}. The pairs stored "
                              "were made from the log as it was; restore it, or start a new run without --resume")


def _check_log_kept(store: Store, run_id: str, log: Path) -> None:
    """Note in the run a log whose contents changed while it was replayed (the verdict is
    then INCOMPLETE): its pairs may answer two versions of it, and the fingerprint the run
    keeps is the first one's."""
    from shadowdiff.verdict.acceptance import LOG_CHANGED

    then = logs.Fingerprint.from_json(store.run(run_id).settings.get(_FINGERPRINT))
    try:
        change = logs.change_since(log, then) if then is not None else None
    except InputError as exc:   # deleted or made unreadable meanwhile
        change = str(exc)
    if change is not None:
        store.set_run_setting(run_id, LOG_CHANGED, change)


# what a recorded setting is made of, in options
_OPTIONS_OF = {"overrides": "overrides (--temperature, --max-tokens, --stream, --logprobs, --extra-body)",
               "thresholds": "thresholds (--near, --difflib)", "sides": "sides (the URLs and models)",
               "redact": "--redact", "endpoint": "--endpoint",
               "grading": "--references, --grader (or the references file's contents)",
               "score": "--score/--no-score"}


def _as_now(key: str, value: Any) -> Any:
    """A recorded setting as this version records it: runs made before --extra-body
    recorded no ``extra`` (they sent none)."""
    return {"extra": {}, **value} if key == "overrides" and isinstance(value, dict) else value


def _closing_line(tally: Tally) -> str:
    parts = [f"{tally.done} pair{'' if tally.done == 1 else 's'} made"]
    if tally.resumed:
        parts.append(f"{tally.resumed} already done")
    if tally.skipped:
        parts.append(f"{tally.skipped} log lines skipped")
    if tally.errors:
        parts.append(f"{tally.errors} with errors")
    return ", ".join(parts)


@click.command("compare", cls=_ReplayCommand)
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@out_dir_option()
@threshold_options
@side_by_side_option
@gate_option("the files could not be compared")
@decision_gate_options
@allow_same_target_option
def compare_command(a: Path, b: Path, out: Path, near: float, difflib_limit: int, side_by_side: int | None,
                    gate: bool, min_reviewed: float | None, max_errors: int | None, min_compared: int | None,
                    max_capped: float | None, without_review: bool | None, allow_same_target: bool) -> None:
    """Compare two files of saved answers (A: baseline, B: candidate) and write the reports.

    An answer whose id the other file lacks is an unpartnered pair, an error. Exits 0 once
    the reports are written (the verdict is in them, and `shadowdiff report` exits with it);
    with --gate, with the verdict's code. The gates given are stored with the run."""
    from shadowdiff.answers.compare import Thresholds
    from shadowdiff.replay.offline import compare_files
    from shadowdiff.report.write import write_reports
    from shadowdiff.store import STORE_FILE, Store

    try:
        if not allow_same_target and (a.resolve() == b.resolve() or logs.fingerprint(a) == logs.fingerprint(b)):
            raise ConfigError(f"{a} and {b} hold the same bytes: every pair would agree, and the run would PASS "
                              "without a candidate; give the candidate's answers, or --allow-same-target")
        given = gating.given(min_reviewed=min_reviewed, max_errors=max_errors, min_compared=min_compared,
                             max_capped=max_capped, without_review=gating.switch(without_review))
        store = Store.open(out / STORE_FILE)
        try:
            run_id, _, unmatched = compare_files(a, b, store, Thresholds(near=near, difflib_limit=difflib_limit))
            _record_gates(store, run_id, given, "compare")
            paths = write_reports(store, run_id, out, side_by_side=side_by_side)
            settings = store.run(run_id).settings
        finally:
            store.close()
    except ShadowdiffError as exc:
        raise (_NoDecision if gate else click.ClickException)(str(exc)) from exc
    if unmatched:
        click.echo(_unpartnered_line(a, b, settings))
    click.echo(paths.summary_text)
    click.echo(f"\nreport: {paths.html}")
    if gate:
        raise SystemExit(int(paths.acceptance.decision))


def _unpartnered_line(a: Path, b: Path, settings: dict[str, Any]) -> str:
    """What the compare run records of its answers without a partner, which side each misses."""
    from shadowdiff.replay.offline import NO_BASELINE, NO_CANDIDATE, UNPARTNERED

    counts = settings.get(UNPARTNERED, {})
    no_candidate, no_baseline = counts.get(NO_CANDIDATE, 0), counts.get(NO_BASELINE, 0)
    return (f"{no_candidate + no_baseline} unpartnered pairs, counted as errors (--max-errors): {no_candidate} "
            f"answers in {a.name} have none in {b.name} (the candidate's missing), {no_baseline} in {b.name} have "
            f"none in {a.name} (the baseline's missing)")


class _Levels(click.ParamType):  # type: ignore[type-arg]
    name = "N,N,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list):
            return value
        try:
            levels = [int(v) for v in str(value).split(",") if v.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of numbers", param, ctx)
        if not levels or min(levels) < 1:
            self.fail(f"{value!r}: give concurrency levels of 1 or more", param, ctx)
        return levels


@click.command("bench")
@side_options(source="the prompts'", replica=False, example=False)
@click.option("--concurrency", "levels", type=_Levels(), default="1,8,32", show_default=True,
              help="Requests in flight, one measurement per level.")
@click.option("--prompts", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A prompt log in any replay format (default: the bundled 20-prompt workload).")
@click.option("--requests", default=None, type=click.IntRange(1),
              help="Measured requests per side, level and round (at least the concurrency; default: the "
                   "concurrency, one wave).")
@click.option("--rounds", default=12, show_default=True, type=click.IntRange(1),
              help="Rounds per level, the sides alternated in each (A B, B A, ...): the ratios' intervals are "
                   "over rounds, and need 3 or more; an even count puts each side first as often as the other. "
                   "Short rounds, many of them, cancel the machine's drift best.")
@click.option("--max-tokens", default=256, show_default=True, type=click.IntRange(1),
              help="max_tokens of every request.")
@timeout_option
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the figures as JSON here.")
@extra_body_option
def bench(baseline: str, candidate: str, baseline_model: str | None, candidate_model: str | None,
          api_key: str | None, levels: list[int], prompts: Path | None, requests: int | None, rounds: int,
          max_tokens: int, timeout: float, out: Path | None, extra_body: tuple[str, ...]) -> None:
    """Throughput and latency of both sides at each concurrency, and the candidate's speedup.

    Each side is measured alone, in rounds that alternate the sides (A B, B A, ...), with
    the same prompts at temperature 0, streamed. Output tokens/s is the aggregate the
    server delivers. Each ratio comes with a 99 % interval (Student's t over the rounds' ratios),
    and is called faster or slower only where that interval leaves out 1.00.
    """
    import json

    from shadowdiff.answers.client import Upstream
    from shadowdiff.replay import bench as bench_module
    from shadowdiff.replay.preflight import check_sides
    from shadowdiff.replay.runner import Overrides, ReplaySettings

    if out is not None and not out.parent.is_dir():   # checked now, not after the whole bench
        raise click.ClickException(f"--out {out}: its directory {out.parent} does not exist")
    if out is not None and prompts is not None and out.resolve() == prompts.resolve():
        raise click.ClickException(f"--out {out} is the prompt log: give another file")
    if requests is not None and requests < max(levels):
        note(f"--requests {requests} is below concurrency {max(levels)}: each round sends at least one wave "
             "(the level's concurrency) per side")
    try:
        settings = ReplaySettings(
            log=prompts or logs.bundled_workload(),
            baseline=Upstream(Side.BASELINE, baseline, baseline_model, api_key),
            candidate=Upstream(Side.CANDIDATE, candidate, candidate_model, api_key),
            overrides=Overrides(temperature=0.0, max_tokens=max_tokens, stream=True, logprobs=0,
                                extra=parse_extra_body(extra_body)), timeout=timeout)
        fmt = logs.detect(settings.log)
        settings = check_sides(settings, fmt, warn=note)
        settings = _equal_work(settings)

        def progress(level: bench_module.Level) -> None:
            rounds = len(level.rounds)
            click.echo(f"concurrency {level.concurrency}, {level.side}: {level.tokens_per_second:,.0f} output tok/s "
                       f"over {rounds} {'round' if rounds == 1 else 'rounds'}"
                       + (f", {level.errors} errors" if level.errors else ""),
                       err=True)

        results = bench_module.run_bench(settings, fmt, levels, requests, progress, rounds)
    except ShadowdiffError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(bench_module.table(results))
    inexact = sorted({r.side for r in results if set(r.token_sources) - {"usage", "logprobs"}})
    if inexact:
        note(f"the output token counts of the {' and the '.join(inexact)} are not the server's own (no usage): "
             "counted from the stream's pieces, a lower bound where a piece holds several tokens (llama.cpp's "
             "server joins the tokens of a multi-byte character), so tokens/s may be understated; the sources "
             "are in --out's token_sources")
    if out is not None:
        from shadowdiff.answers.redact import public_url

        out.write_text(json.dumps({"baseline": {"url": public_url(baseline), "model": settings.baseline.model},
                                   "candidate": {"url": public_url(candidate), "model": settings.candidate.model},
                                   "versions": settings.servers, "max_tokens": max_tokens, "rounds": rounds,
                                   "requests_per_round": {r.concurrency: r.requests // max(1, len(r.rounds))
                                                          for r in results if r.side == Side.BASELINE.value},
                                   "extra_body": settings.overrides.extra,
                                   "levels": [r.as_json() for r in results],
                                   "ratios": bench_module.ratios(results)}, indent=2) + "\n")
    if any(r.errors for r in results):
        raise SystemExit(1)


def _equal_work(settings: ReplaySettings) -> ReplaySettings:
    """On two vLLM servers, ``ignore_eos``: every answer ``max_tokens`` long, so that the sides
    do the same work (tokens/s favours the side that writes longer answers, latency the
    shorter), as vLLM's own serving benchmark does. Not where the user set it, nor on
    another engine, which may refuse a field it does not know."""
    import dataclasses

    extra = settings.overrides.extra
    if "ignore_eos" in extra or not all(settings.servers.get(side) for side in ("baseline", "candidate")):
        return settings
    note("both servers are vLLM: bench sends ignore_eos, so every answer is --max-tokens long and the two sides "
         "do the same work (--extra-body ignore_eos=false lets answers end)")
    return dataclasses.replace(settings, overrides=dataclasses.replace(settings.overrides,
                                                                       extra={**extra, "ignore_eos": True}))


@click.command("demo")
@click.option("--out", "out", default=Path("shadowdiff-demo"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The directory for the demo's store and reports.")
@click.option("--latency", type=click.Choice(["realistic", "zero"]), default="realistic", show_default=True,
              help="The simulators' latency model ('realistic' shows the FP8 speedup; 'zero' is instant).")
@click.option("--concurrency", default=8, show_default=True,
              help="Requests in flight per side in the demo's replay.")
def demo(out: Path, latency: str, concurrency: int) -> None:
    """Everything on one machine: three simulated vLLM servers, a replay, the reports.

    The servers are `shadowdiff simulate` test doubles (baseline, fp8, and a baseline
    replica for the noise floor); their text is synthetic, not a model's.
    """
    from shadowdiff.replay import demo as demo_module

    click.echo("starting three simulated vLLM servers (test doubles, synthetic text): "
               f"{demo_module.BASELINE_MODEL} baseline and replica, {demo_module.CANDIDATE_MODEL} fp8", err=True)
    try:
        with demo_module.simulators(latency) as urls:
            click.echo("  " + ", ".join(f"{side.value} {url}" for side, url in urls.items()), err=True)
            settings = demo_module.settings(urls, concurrency)
            if out.exists() and any(out.iterdir()):
                click.echo(f"{out} exists: the demo adds a new run to it", err=True)
            run_replay(settings, out, None, resume=False)
    except ShadowdiffError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:   # (Interrupted too: the simulated servers are stopped by now)
        tell(f"interrupted: the simulated servers are stopped; {out} holds the unfinished run "
             "(shadowdiff demo again starts a new one)")
        raise SystemExit(INTERRUPTED) from None
    click.echo("simulated servers stopped", err=True)
