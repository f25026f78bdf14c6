"""Command-line pieces that several commands share: option types, ``--label``,
``--side-by-side``, the sides a replay or a bench talks to, the comparison thresholds and
the ``note:`` lines on stderr."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from shadowdiff.answers.invisible import safe_text
from shadowdiff.errors import ConfigError, ShadowdiffError


class ConfigProblem(click.ClickException):
    """A setting or flag that cannot work (``ConfigError``): exit 3, kept apart from 1 and
    2, which ``report`` gives to FAIL and INCOMPLETE and ``serve`` and ``review`` to a
    crash and a misspelt flag."""

    exit_code = 3


class NoDecisionUsage(click.UsageError):
    """A misused option of a command whose exit code is a verdict (``report``, ``replay
    --gate``): exit 3, never click's 2, which would read as INCOMPLETE."""

    exit_code = 3


def click_error(exc: ShadowdiffError) -> click.ClickException:
    """A ``ShadowdiffError`` as click shows it: one ``Error:`` line; exit 3 for a
    ``ConfigError``, else 1."""
    return (ConfigProblem if isinstance(exc, ConfigError) else click.ClickException)(str(exc))


class Finite(click.FloatRange):
    """A float in a range, never NaN nor infinite: every comparison with NaN is false, so
    click's range check lets it through (``--min-reviewed nan`` once made every unreviewed
    run PASS), and a range open above lets infinity through."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number + 0.0   # (-0 is 0: never shown as "-0" beside a gate)


class NumberOr(click.ParamType):  # type: ignore[type-arg]
    """A number, or a word (``keep``, ``all``) that stands for None."""

    def __init__(self, kind: type[float] | type[int], word: str = "keep") -> None:
        self.kind = kind
        self.word = word
        self.name = f"{kind.__name__}|{word}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or value == self.word:
            return None
        try:
            number = self.kind(value)
        except ValueError:
            self.fail(f"{value!r} is not a number or {self.word!r}", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if number < 0:
            self.fail(f"{value!r} is negative", param, ctx)
        return number


def side_by_side_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--side-by-side N|all``, for every command that writes reports."""
    from shadowdiff.report import SIDE_BY_SIDE  # (here: ``parse_labels`` alone must stay cheap to import)

    return click.option("--side-by-side", type=NumberOr(int, "all"), default=str(SIDE_BY_SIDE), show_default=True,
                        help="Changed pairs shown side by side in report.html/report.md, in the review queue's "
                             "order, and as many failed ones after them ('all' for every one); every pair is in the "
                             "store and the review UI either way (and in pairs.jsonl when it is written).")(f)


class ReviewUrl(click.ParamType):  # type: ignore[type-arg]
    """The review UI's address, ``http(s)://host[:port]/prefix``: the reports link each
    pair to ``<it>/pairs/<id>``, so anything but a plain web address is refused (a
    ``javascript:`` link in a report would run where the report is opened)."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 (read for its check: a port that is not a number raises)
        except ValueError:
            self.fail(f"{value!r} is not a web address", param, ctx)
        if parts.scheme not in ("http", "https") or not parts.hostname or "?" in text or "#" in text \
                or any(c.isspace() or c in "\"'<>\\" for c in text):
            self.fail(f"{value!r} is not the review UI's address (http(s)://host[:port]/review, no query)",
                      param, ctx)
        if parts.username is not None or parts.password is not None:
            # every link in every report would carry them, to whoever reads the report
            self.fail(f"{parts.scheme}://…@{parts.hostname}: give the review UI's address without credentials "
                      "(reviewers sign in with their own tokens)", param, ctx)
        return text.rstrip("/")


def review_url_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--review-url``, for ``report`` and ``replay`` (the runs a review UI serves)."""
    return click.option("--review-url", type=ReviewUrl(), default=None,
                        help="The review UI's address (as reviewers open it, e.g. https://review.example/review): "
                             "the reports link each pair to its page there.")(f)


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``--label KEY=VALUE`` options as a dict (``ConfigError`` for a malformed one)."""
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--label expects KEY=VALUE, got {item!r}")
        labels[key] = value
    return labels


# Fields replay sets itself, from its own options: --extra-body may not change them behind
# those options' backs (the run's settings would say one thing and the requests another).
OWN_FIELDS = {"temperature": "--temperature", "max_tokens": "--max-tokens", "max_completion_tokens": "--max-tokens",
              "stream": "--stream/--no-stream", "stream_options": "--stream/--no-stream", "logprobs": "--logprobs",
              "top_logprobs": "--logprobs", "n": "--temperature (greedy replays send n = 1)",
              "model": "--baseline-model/--candidate-model", "messages": "the log", "prompt": "the log"}


# ... and fields that must not be recorded with the run (the store keeps no credentials
# nor who a request was for), or that are a client library's, not a server's
REFUSED_FIELDS = {"api_key": "--api-key", "user": "nothing: the store keeps no user",
                  "extra_body": "nothing: give each field as FIELD=JSON, e.g. --extra-body repeat_penalty=1.0"}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON knows")


def parse_extra_body(items: Iterable[str]) -> dict[str, Any]:
    """``--extra-body FIELD=JSON`` options as a dict (``ConfigError`` for a malformed one,
    for a field given twice, for a field replay sets from an option of its own, and for
    NaN or infinities, which no server's JSON parser takes)."""
    extra: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--extra-body expects FIELD=JSON, got {item!r}")
        # (a field that differs from one of ours only in case or spaces is a slip, not a field)
        near = key.strip().lower()
        if near in OWN_FIELDS:
            raise ConfigError(f"--extra-body cannot set {key!r}: it comes from {OWN_FIELDS[near]}")
        if near in REFUSED_FIELDS:
            raise ConfigError(f"--extra-body cannot set {key!r}: use {REFUSED_FIELDS[near]}")
        if key in extra:
            raise ConfigError(f"--extra-body {key} is given twice")
        try:
            extra[key] = json.loads(value, parse_constant=_no_constant)
        except ValueError:
            raise ConfigError(f"--extra-body {key}: {value!r} is not JSON (a string is written in quotes: "
                              f"{key}='\"{value}\"'; NaN and infinities are not JSON)") from None
    return extra


def decision_gate_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--min-reviewed``, ``--max-errors``, ``--min-compared`` and ``--max-capped``: the gates of every
    verdict, for ``report`` and ``replay``. Their default is None, so that a flag given is
    told from one left out: the value then comes from the run, else from
    ``shadowdiff.verdict.gates`` (where the defaults live)."""
    from shadowdiff.verdict.gates import BY_NAME

    f = click.option("--min-compared", default=None, type=click.IntRange(min=1),
                     help="Comparable pairs answered by both sides that PASS needs at least (the evidence; "
                          f"default {BY_NAME['min_compared'].default}, or the run's).")(f)
    f = click.option("--max-capped", default=None, type=Finite(0.0, 1.0),
                     help="Share of comparable pairs allowed to stop at the token cap on both sides (compared "
                          "on what came before the cap only; 0.5: half), else INCOMPLETE "
                          f"(default {BY_NAME['max_capped'].default}, or the run's).")(f)
    f = click.option("--without-review/--with-review", "without_review", default=None,
                     help="Decide from the measures alone, with no person's review: the gates given on what the "
                          "run measured (--max-excess-divergence with a replica, --max-token-disagreement, "
                          "--min-token-agreement or --max-kl when scored, --max-flips on graded prompts, "
                          "--max-errors) decide, and the pairs nobody reviewed are said, not waited for (for CI). "
                          "--with-review undoes it for a run that stored it.")(f)
    f = click.option("--max-errors", default=None, type=click.IntRange(min=0),
                     help="Prompts allowed to go unchecked: pairs that could not be compared, log lines that "
                          "made no pair, pairs where neither side reached an answer, pairs whose replica failed "
                          f"(default {BY_NAME['max_errors'].default}, or the run's).")(f)
    return click.option("--min-reviewed", default=None, type=Finite(0.0, 1.0),
                        help="Share of pairs changed in substance (near or divergent) that must have a verdict "
                             "for PASS, from 0 to 1 (0.9: 90 %; default 1, or the run's). Pairs with a sign of a "
                             "factual regression (a flip, a changed number or label) need one whatever it is.")(f)


def confidence_gate_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-excess-divergence`` and ``--max-factual-rate``: the gates on how sure a run
    is (``Acceptance.gate``), for ``report`` and ``replay --gate``."""
    f = click.option("--max-factual-rate", default=None, type=Finite(0.0, 1.0, min_open=True, max_open=True),
                     help="INCOMPLETE (not PASS) while the reviews allow a factual regression rate above this "
                          "(0.05: 5 %), by the exact 95 % bound; `shadowdiff plan` says how many reviews that "
                          "takes.")(f)
    return click.option("--max-excess-divergence", default=None, type=Finite(0.0, 1.0),
                        help="FAIL when the candidate surely changes more answers than the noise floor by more "
                             "than this (0.1: 10 points): when the 95 % interval of the excess lies above it. "
                             "Needs a replica.")(f)


def flip_gate_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-flips``: the gate on correct→wrong flips (``Acceptance.gate_flips``), for
    ``report`` and ``replay --gate``."""
    return click.option("--max-flips", default=None, type=click.IntRange(min=0),
                        help="FAIL when more than this many pairs went from right (the baseline) to wrong (the "
                             "candidate) by their reference answers (0: any such flip fails); INCOMPLETE when no "
                             "pair was graded.")(f)


def token_gate_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-token-disagreement``, ``--min-token-agreement`` and ``--max-kl``: the gates on
    teacher-forced scoring (``shadowdiff.verdict.tokengates``), for ``report`` and ``replay --gate``."""
    f = click.option("--max-kl", default=None, type=Finite(0.0, None),
                     help="FAIL when the candidate's next-token distributions surely depart from the baseline's "
                          "by more than this KL divergence per token, in nats (0.05), over the baseline's "
                          "answers: when the 95 % interval lies above it; INCOMPLETE while it reaches above it. "
                          "Needs scored answers with logprobs (replay --score).")(f)
    f = click.option("--min-token-agreement", default=None, type=Finite(0.0, 1.0),
                     help="FAIL when the candidate surely reads fewer than this share of the baseline's answer "
                          "tokens as its own top choice (0.95: 95 %): when the 95 % interval lies below it; "
                          "INCOMPLETE while it reaches below it. Needs scored answers (replay --score).")(f)
    return click.option("--max-token-disagreement", default=None, type=Finite(0.0, 1.0),
                        help="FAIL when the candidate surely disagrees with the baseline's reading of its own "
                             "answers on more than this share of their tokens (0.02: 2 points) beyond the "
                             "baseline's own disagreement: when the 95 % interval lies above it; INCOMPLETE while "
                             "it reaches above it. Needs scored answers (replay --score).")(f)


bench_option = click.option(
    "--bench", "bench", type=click.Path(path_type=Path), default=None,   # (read, and refused, by benchfigures)
    help="A `shadowdiff bench --out` file measured on the same servers: the report's speed figure is then "
         "bench's (each side alone, alternated rounds, an interval), the run's own beside it.")


extra_body_option = click.option(
    "--extra-body", "extra_body", multiple=True, metavar="FIELD=JSON",
    help="A field sent in every request's body, over the log's (repeatable; the value is JSON): what an engine "
         "needs beyond the OpenAI fields, e.g. repeat_penalty=1.0 for greedy decoding on llama.cpp's server.")


def allow_same_target_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--allow-same-target``, for ``replay`` and ``compare``: see ``shadowdiff.answers.targets``."""
    return click.option("--allow-same-target", is_flag=True,
                        help="Allow the same server and model as baseline and candidate (to measure its noise: "
                             "the report says so). Without it that is refused, as a slip that would PASS.")(f)


def side_options(*, source: str, replica: bool, example: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--baseline`` and ``--candidate`` (base URLs), ``--replica`` when ``replica``, each
    side's ``--*-model`` and ``--api-key``, in that order: the sides of ``replay`` (with a
    replica) and ``bench`` (without). ``source`` names, in the model options' help, what
    gives the model by default (``"the log's"``); ``example`` adds an example URL to
    ``--baseline``'s help."""
    every = "all sides" if replica else "both sides"

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option("--api-key", envvar="SHADOWDIFF_API_KEY", default=None,
                         help=f"Bearer token for {every} (without one, a side's URL may carry user:password@, sent "
                              "as Basic).")(f)
        # the defaults are shadowdiff.replay.preflight's: the log's model, or the one model a server serves
        if replica:
            f = click.option("--replica-model", default=None,
                             help="Model name sent to the replica (default: --baseline-model, or as for the "
                                  "baseline).")(f)
        for side in ("candidate", "baseline"):
            f = click.option(f"--{side}-model", default=None,
                             help=f"Model name sent to the {side} (default: {source}, or the one model the server "
                                  "serves).")(f)
        if replica:
            f = click.option("--replica", default=None, help="A second baseline, to measure the noise floor.")(f)
        f = click.option("--candidate", required=True, help="Base URL of the candidate server.")(f)
        shown = " (e.g. http://host:8000)" if example else ""
        return click.option("--baseline", required=True, help=f"Base URL of the baseline server{shown}.")(f)

    return decorate


def timeout_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--timeout``, a request's whole time, for ``replay`` and ``bench``."""
    return click.option("--timeout", default=300.0, show_default=True, type=Finite(min=0, min_open=True),
                        help="Seconds for each attempt of a request, whole: connecting, sending and the whole "
                             "answer, however slowly it streams; a request out of time is recorded as timed out "
                             "(after its retries).")(f)


def threshold_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--near`` and ``--difflib``, how pairs are compared (``Thresholds``), for ``replay``
    and ``compare``."""
    f = click.option("--difflib", "difflib_limit", default=0, show_default=True,
                     help="Also compute difflib's ratio (autojunk off) for texts up to this many characters.")(f)
    return click.option("--near", "near", default=0.9, show_default=True, type=Finite(0.0, 1.0),
                        help="Similarity from which a pair is 'near'.")(f)


def out_dir_option(help: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--out DIRECTORY``, required: where ``replay`` and ``compare`` keep the store and
    the reports."""
    return click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
                        help=help or "The directory for the run's store (shadowdiff.sqlite) and its reports "
                                     "(made if missing; a store there already gets one more run).")


def gate_option(undecided: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--gate``, for ``replay`` and ``compare``: exit with the verdict's code. ``undecided``
    says, in the help, when there is no decision (3)."""
    return click.option("--gate", is_flag=True,
                        help="Exit with the verdict's code, as `shadowdiff report` does: 0 PASS, 1 FAIL, "
                             f"2 INCOMPLETE, 3 no decision ({undecided}).")


def note(message: str) -> None:
    """A ``note:`` line on stderr: something the user should know that is not an error."""
    # (on one line, invisible characters as escapes: a note quotes what servers answered)
    click.echo(f"note: {safe_text(message)}", err=True)


def transport_click_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--tls-cert``, ``--tls-key`` and ``--forwarded-allow-ips`` (with their ``SHADOWDIFF_*``
    variables), for the commands that serve the review UI: ``serve`` and ``review``.
    Checked by ``shadowdiff.commands.listen.check_tls`` and ``check_forwarded``."""
    f = click.option("--forwarded-allow-ips", metavar="IPS", default=None, envvar="SHADOWDIFF_FORWARDED_ALLOW_IPS",
                     show_envvar=True,
                     help="Proxies (addresses or networks, comma-separated; '*' for any) whose X-Forwarded-Proto "
                          "and X-Forwarded-For are believed, e.g. an ingress that terminates TLS (default: "
                          "none).")(f)
    f = click.option("--tls-key", metavar="FILE", default=None, envvar="SHADOWDIFF_TLS_KEY", show_envvar=True,
                     help="The private key of --tls-cert (PEM, unencrypted).")(f)
    return click.option("--tls-cert", metavar="FILE", default=None, envvar="SHADOWDIFF_TLS_CERT", show_envvar=True,
                        help="Serve HTTPS with this certificate (PEM, the chain after it); needs --tls-key.")(f)
