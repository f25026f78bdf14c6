"""``shadowdiff report``, ``judge``, ``review``, ``close`` and ``prune``: the commands that work on a store.

They belong to no mode: a store written by ``replay``, ``compare`` or ``serve`` is
reported, judged and reviewed the same way.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from shadowdiff.answers.invisible import safe_text
from shadowdiff.commands.listen import bind, check_forwarded, check_tls, transport_options
from shadowdiff.commands.options import (
    Finite,
    NoDecisionUsage,
    bench_option,
    click_error,
    confidence_gate_options,
    decision_gate_options,
    flip_gate_option,
    review_url_option,
    side_by_side_option,
    token_gate_options,
    transport_click_options,
)
from shadowdiff.errors import ConfigError, ShadowdiffError

# What runs a command is imported when it runs (in the functions below), not here: ``--help``
# loads no store, SQLAlchemy or report writer.
if TYPE_CHECKING:
    from shadowdiff.review.judge import JudgeTally
    from shadowdiff.store import Run, Store
    from shadowdiff.store.prune import Pruned


def judge_options(required: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The LLM judge's options, shared by ``judge`` and ``report``."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for decl, kwargs in reversed([
            ("--judge", {"required": required, "default": None, "envvar": "SHADOWDIFF_JUDGE",
                         "help": "Base URL of an OpenAI-compatible server that pre-fills suggested verdicts."}),
            ("--judge-model", {"required": required, "default": None, "envvar": "SHADOWDIFF_JUDGE_MODEL",
                               "help": "The judge's model name."}),
            ("--judge-api-key", {"default": None, "envvar": "SHADOWDIFF_JUDGE_API_KEY",
                                 "help": "Bearer token for the judge."}),
            ("--judge-concurrency", {"default": 4, "show_default": True, "help": "Judge calls in flight."}),
            ("--judge-timeout", {"default": 120.0, "show_default": True,
                                 "type": click.FloatRange(min=0, min_open=True),
                                 "help": "Seconds for each attempt of a judge call, whole (replies are not streamed); "
                                         "a call is tried up to 4 times (timeouts, 429, 502-504), then counted "
                                         "failed."}),
        ]):
            fn = click.option(decl, **kwargs)(fn)  # type: ignore[arg-type]
        return fn

    return decorate


@contextlib.contextmanager
def _store_run(store: str, run_id: str | None) -> Iterator[tuple[Store, Run]]:
    """An existing store and one of its runs (the latest by default); errors become click's."""
    from shadowdiff.store import Store

    try:
        opened = Store.open_existing(store)
        try:
            run = opened.run(run_id) if run_id else opened.latest_run()
            if run is None:
                raise ConfigError(f"the store {store} holds no run yet")
            yield opened, run
        finally:
            opened.close()
    except ShadowdiffError as exc:
        raise click_error(exc) from exc


def _run_judge(store: Store, run_id: str, url: str, model: str | None, api_key: str | None, concurrency: int,
               timeout: float, redo: bool = False) -> JudgeTally:
    import asyncio

    from tqdm import tqdm

    from shadowdiff.review.judge import JudgeSettings, describe, judge_run, pairs_to_judge

    if not model:
        raise ConfigError("--judge needs --judge-model")
    settings = JudgeSettings(url, model, api_key, concurrency, timeout=timeout)
    total = len(pairs_to_judge(store, run_id, redo))
    with tqdm(total=total, unit="pair", desc="judge", file=sys.stderr, dynamic_ncols=True,
              mininterval=0.2 if sys.stderr.isatty() else 10.0) as bar:
        tally = asyncio.run(judge_run(store, run_id, settings, redo, progress=lambda: bar.update(1)))
    click.echo(safe_text(describe(tally), lines=True), err=True)
    if tally.failed and not tally.judged and not tally.unparsable:
        # not one answer: unreachable, refused, the wrong model - the --judge given is wrong,
        # a configuration error (exit 3), not pairs the judge could not decide
        raise ConfigError(f"the judge at {url} could not be used: every call failed ({tally.first_problem})")
    return tally


@click.command("judge")
@click.argument("store")
@click.option("--run", "run_id", default=None, help="Which run (default: the latest).")
@click.option("--redo", is_flag=True, help="Ask again about pairs that already have a suggestion.")
@judge_options(required=True)
def judge(store: str, run_id: str | None, redo: bool, judge: str, judge_model: str, judge_api_key: str | None,
          judge_concurrency: int, judge_timeout: float) -> None:
    """Ask an LLM judge the rubric question for every pair changed in substance: suggestions for reviewers.

    Exits 1 when some pairs could not be judged (the judge failed or answered out of format),
    3 when the judge could not be used at all (no call answered) or an option is wrong.
    """
    with _store_run(store, run_id) as (opened, run):
        tally = _run_judge(opened, run.id, judge, judge_model, judge_api_key, judge_concurrency, judge_timeout, redo)
    if tally.failed or tally.unparsable:
        raise SystemExit(1)


NO_REPORT = 3


class _NoReport(click.ClickException):
    exit_code = NO_REPORT


class _ReportCommand(click.Command):
    """``report``'s exit code gates rollouts: 1 is FAIL and 2 INCOMPLETE, so a report
    that could not be made at all (a bad option, no store) exits 3 instead of click's
    1 or 2, and a typo never reads as a regression."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise NoDecisionUsage(exc.format_message(), exc.ctx) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise NoDecisionUsage(exc.format_message(), exc.ctx) from exc
        except click.ClickException as exc:
            raise _NoReport(exc.format_message()) from exc
        except ShadowdiffError as exc:   # input or settings it said what is wrong with: no traceback
            raise _NoReport(str(exc)) from exc
        except Exception as exc:   # an unwritable --out, a database gone: still no decision
            # (the traceback quotes what a server or a store said: no raw ESC or CR to the terminal)
            click.echo(safe_text(traceback.format_exc(), lines=True), err=True, nl=False)
            raise _NoReport(f"no report: {exc}") from exc


@click.command("report", cls=_ReportCommand)
@click.argument("store")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the reports (default: the store's directory).")
@click.option("--run", "run_id", default=None, help="Which run (default: the latest).")
@decision_gate_options
@confidence_gate_options
@flip_gate_option
@token_gate_options
@bench_option
@side_by_side_option
@review_url_option
@judge_options(required=False)
# (the values of shadowdiff.report.write's PairsExport and EXPORT_LIMIT, written out: --help imports no report)
@click.option("--pairs-export", type=click.Choice(["auto", "both", "jsonl", "csv", "none"]), default="auto",
              show_default=True,
              help="The per-pair files: jsonl (pairs.jsonl, and the texts files), csv (pairs.csv), both, or none. "
                   "auto: both for a run of up to 100,000 stored pairs, none beyond (a month of pairs is tens of GB "
                   "and most of a report's time; the report says so). Every pair stays in the store and the "
                   "review UI.")
@click.option("--compress/--no-compress", default=None,
              help="gzip the per-pair files (pairs.jsonl.gz, ...), streamed. Default: when the run stores more "
                   "than 100,000 pairs.")
def report(store: str, out: Path | None, run_id: str | None, min_reviewed: float | None, max_errors: int | None,
           min_compared: int | None, max_excess_divergence: float | None, max_factual_rate: float | None,
           max_flips: int | None, max_capped: float | None, max_token_disagreement: float | None,
           min_token_agreement: float | None, max_kl: float | None, bench: Path | None, without_review: bool | None,
           side_by_side: int | None, judge: str | None, judge_model: str | None,
           judge_api_key: str | None, judge_concurrency: int, judge_timeout: float, review_url: str | None,
           pairs_export: str, compress: bool | None) -> None:
    """Write the reports of a run, and decide: exit 0 PASS, 1 FAIL, 2 INCOMPLETE (3: no report could be made).

    PASS needs a finished run with at least --min-compared comparable pairs answered by
    both sides, zero factual verdicts against the candidate, and a verdict on every pair
    changed in substance (or --min-reviewed of them). The gates given to the replay that
    made the run apply here too, unless overridden by a flag given here; the report says
    where each came from. With --judge, an LLM judge first fills in suggestions for pairs
    that have none; suggestions never count toward PASS.
    """
    from shadowdiff.report.benchfigures import read
    from shadowdiff.report.write import write_reports
    from shadowdiff.store.members import RunMembers, describe
    from shadowdiff.verdict import gates as gating

    figures = read(bench) if bench else None     # (read before the store is opened: a bad file changes nothing)

    if compress and pairs_export == "none":
        click.echo("warning: --compress does nothing with --pairs-export none (no per-pair file is written)",
                   err=True)
    with _store_run(store, run_id) as (opened, run):
        if figures is not None and run.settings.get("bench"):
            click.echo(f"note: --bench {bench} over the run's own bench figures "
                       f"({run.settings['bench'].get('file')}), for this report only", err=True)
        if judge:
            _run_judge(opened, run.id, judge, judge_model, judge_api_key, judge_concurrency, judge_timeout)
        target = out or (Path(store) if Path(store).is_dir() else Path(store).parent if "://" not in store
                         else Path("."))
        paths = write_reports(opened, run.id, target, min_reviewed=min_reviewed, max_errors=max_errors,
                              min_compared=min_compared, side_by_side=side_by_side,
                              max_excess_divergence=max_excess_divergence, max_factual_rate=max_factual_rate,
                              max_flips=max_flips, max_capped=max_capped,
                              max_token_disagreement=max_token_disagreement, min_token_agreement=min_token_agreement,
                              max_kl=max_kl, review_url=review_url, bench=figures,
                              without_review=gating.switch(without_review),
                              pairs_export=pairs_export, compress=compress)
        members = describe(RunMembers(opened).members(run.id))
    click.echo(f"run {run.id} ({run.kind}, started {run.created_at.isoformat()}"
               f"{'' if run.finished_at else ', not finished'}{', ' + members if members else ''})")
    click.echo(paths.summary_text)
    click.echo(f"\nreport: {paths.html}")
    raise SystemExit(int(paths.acceptance.decision))


@click.command("plan")
@click.option("--max-factual-rate", "targets", multiple=True, type=Finite(0.0, 1.0, min_open=True, max_open=True),
              help="A bound on the factual regression rate to plan for (repeatable; default 0.1, 0.05, 0.02, 0.01).")
@click.option("--factual", default=0, show_default=True, type=click.IntRange(0, 200),
              help="Factual regressions expected (or already found) among the reviewed pairs, up to 200 (with more, "
                   "the candidate has failed: no number of reviews makes its rate small, and the exact bound "
                   "takes long to solve).")
def plan(targets: tuple[float, ...], factual: int) -> None:
    """How many reviewed pairs bound the factual regression rate below a target (exact,
    one-sided 95 %): what `report --max-factual-rate` will ask for."""
    from shadowdiff.statistics import confidence

    click.echo("target rate  reviewed pairs needed" + (f" (with {factual} factual among them)" if factual else ""))
    for target in targets or (0.1, 0.05, 0.02, 0.01):
        click.echo(f"{target * 100:>10g} %  {confidence.reviews_needed(target, factual):,}")
    click.echo("(pairs changed in substance that get a verdict; identical answers need none. Review them in the "
               "order the queue gives, and the bound is about the kind reviewed first)")


@click.command("review")
@click.argument("store")
@click.option("--token", envvar="SHADOWDIFF_REVIEW_TOKEN", show_envvar=True, default=None,
              help="The shared (admin) token: single-reviewer mode, exports (default: a random one, printed). "
                   "A team's reviewers get tokens of their own from `shadowdiff reviewers add`.")
@click.option("--claim-ttl", default=600.0, show_default=True,
              help="Seconds a pair taken with 'next' stays reserved for its reviewer.")
@transport_click_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address the review UI listens on (0.0.0.0 for a team, behind TLS).")
@click.option("--port", default=8090, show_default=True, help="The port the review UI listens on.")
def review(store: str, token: str | None, claim_ttl: float, host: str, port: int, tls_cert: str | None,
           tls_key: str | None, forwarded_allow_ips: str | None) -> None:
    """Serve the blind side-by-side review UI for the pairs in STORE."""
    import uvicorn

    from shadowdiff.review.app import build_review_app
    from shadowdiff.store import Store

    if token is not None and len(token) < 8:
        raise click.UsageError("--token must be at least 8 characters")
    try:
        check_tls(tls_cert, tls_key)
        transport = transport_options(tls_cert, tls_key, check_forwarded(forwarded_allow_ips))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    generated = token is None
    token = token or secrets.token_urlsafe(18)
    try:
        opened = Store.open_existing(store)
    except ShadowdiffError as exc:
        raise click_error(exc) from exc
    try:
        app = build_review_app(opened, token, claim_ttl=claim_ttl)
        sock = bind(host, port)    # before the address and token: a busy port prints neither
        print(f"shadowdiff review: {'https' if tls_cert else 'http'}://{host}:{port}/review/", file=sys.stderr,
              flush=True)
        if generated:
            print(f"sign in with the token {token}", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", server_header=False,
                                **transport)
        uvicorn.Server(config).run(sockets=[sock])
    except ShadowdiffError as exc:
        raise click_error(exc) from exc
    finally:
        opened.close()


@click.command("close")
@click.argument("store")
@click.option("--run", "run_id", required=True,
              help="The run to close: its id, as `shadowdiff report` prints it (never a default: closing the "
                   "wrong run would let it pass).")
@click.option("--force", is_flag=True,
              help="Close it even though some of its proxies still beat their hearts (they go on in a new run).")
def close(store: str, run_id: str, force: bool) -> None:
    """Close a proxy's run whose proxies were killed, so that report can decide on it.

    A proxy leaves its run when it stops, and the last one to leave closes it; one killed
    (kill -9, out of memory, a node gone) leaves it open, and `shadowdiff report` says
    INCOMPLETE for as long as it is. Once those proxies are gone for good, close the run:
    it holds every pair they compared before they died (the requests they held then are
    counted as lost). Refused while a proxy of the run still beats its heart
    (every 2 s: one silent for 30 s is taken for gone), unless --force: the run then
    takes no more pairs, and its proxies go on in a new run.
    A replay's run is never closed by hand - continue it with `--resume`, so that no
    line of its log goes unchecked; a compare is run again.
    """
    from shadowdiff.store.members import RunMembers, StillRunning

    with _store_run(store, run_id) as (opened, run):
        if run.finished_at is not None:
            raise click.ClickException(f"run {run.id} is already closed (at {run.finished_at.isoformat()})")
        if run.kind != "serve":
            how = "continue it with the same `shadowdiff replay` command and --resume" if run.kind == "replay" \
                else "run `shadowdiff compare` again"
            raise click.ClickException(f"run {run.id} is a {run.kind} run, which is not closed by hand: {how}")
        try:
            closed = RunMembers(opened).close(run.id, force=force)
        except StillRunning as exc:
            raise click.ClickException(str(exc)) from exc
    gone = f" and {len(closed)} of its proxies that never stopped" if closed else ""
    click.echo(f"closed run {run.id} (serve, started {run.created_at.isoformat()}){gone}; report on it with "
               f"`shadowdiff report {store} --run {run.id}`")


@click.command("prune")
@click.argument("store")
@click.option("--older-than", required=True, metavar="DURATION",
              help="Delete the pairs stored longer ago than this: 7d, 36h, 90m, 1d12h (units s, m, h, d, w).")
@click.option("--run", "run_id", default=None, help="Only this serve run (default: every serve run).")
@click.option("--deployment", default=None, help="Only the serve runs of this --deployment name.")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--vacuum", "then_vacuum", is_flag=True,
              help="Then give the space back: SQLite's VACUUM (the file shrinks; writers wait while it runs), "
                   "PostgreSQL's plain VACUUM.")
def prune_command(store: str, older_than: str, run_id: str | None, deployment: str | None, dry_run: bool,
                  then_vacuum: bool) -> None:
    """Delete the old pairs of serve runs, keeping reviewed ones, runs and their outcome counts.

    A serve run's outcome mix, rates and verdict stay as they were (they come from its
    counts, and a pair deleted before its verdict still counts as unreviewed); its
    tables, speed figures, pairs.jsonl and side-by-side views then cover the pairs
    still stored. Replay and compare runs are never pruned. Deletes 5,000 pairs per
    transaction, so a proxy writing to the store meanwhile waits at most for one.
    Exits 0, 3 for a wrong option or run, 1 when the store failed (what was deleted by
    then stays deleted; run it again).
    """
    from sqlalchemy.exc import SQLAlchemyError

    from shadowdiff.store import Store
    from shadowdiff.store.prune import Scope, parse_duration, prune, vacuum

    try:
        seconds = parse_duration(older_than)
        opened = Store.open_existing(store)
    except ShadowdiffError as exc:
        raise click_error(exc) from exc
    try:
        result = prune(opened, seconds, Scope(run_id=run_id, deployment=deployment), dry_run=dry_run)
        click.echo(describe_prune(result, {run.id: run for run in opened.runs()}, older_than))
        if then_vacuum and not dry_run:
            vacuum(opened)
            click.echo("vacuumed: the file is rewritten without the space freed" if opened.dialect == "sqlite" else
                       "vacuumed: the space freed is reusable; only VACUUM FULL gives it back to the disk")
    except ShadowdiffError as exc:
        raise click_error(exc) from exc
    except SQLAlchemyError as exc:
        raise click.ClickException(f"the store failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
                                   "what was deleted by then stays deleted: run prune again") from exc
    finally:
        opened.close()


def describe_prune(result: Pruned, runs: dict[str, Run], older_than: str) -> str:
    """What a prune deleted and kept, per run, for the terminal."""
    verb = "would delete" if result.dry_run else "deleted"
    lines = [f"pairs of serve runs stored before {result.cutoff.isoformat(timespec='seconds')} "
             f"(older than {older_than}):"]
    for run_id in sorted({*result.deleted, *result.kept_reviewed, *result.kept_claimed},
                         key=lambda i: runs[i].created_at if i in runs else result.cutoff):
        run = runs.get(run_id)
        about = f" (deployment {run.name}, started {run.created_at.isoformat(timespec='seconds')})" if run and \
            run.name else f" (started {run.created_at.isoformat(timespec='seconds')})" if run else ""
        kept = [f"{n:,} kept: reviewed" for n in [result.kept_reviewed[run_id]] if n] + \
               [f"{n:,} kept: held by a reviewer" for n in [result.kept_claimed[run_id]] if n]
        lines.append(f"  run {run_id}{about}: {verb} {result.deleted[run_id]:,}" + "".join(f"; {k}" for k in kept))
    kept_total = sum(result.kept_reviewed.values()) + sum(result.kept_claimed.values())
    done = "" if result.dry_run else f" in {result.batches} transaction{'s' * (result.batches != 1)} " \
        f"(the longest {result.longest_batch:.2f} s)"
    lines.append(f"{verb} {result.total:,} pairs{done}; kept {kept_total:,} reviewed or held by a reviewer; "
                 "runs, their outcome counts, and replay and compare runs are never pruned")
    return "\n".join(lines)
