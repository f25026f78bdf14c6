"""``shadowdiff serve``: flags, ``SHADOWDIFF_*`` environment variables and a TOML file.

Precedence: a flag beats its environment variable, which beats the config file,
which beats the default. The config file uses the flags' names with underscores:

    # shadowdiff.toml
    primary = "http://bf16:8000"
    shadow = "http://fp8:8000"
    shadow_model = "Qwen/Qwen3-8B-FP8"
    sample_rate = 0.25
    exclude_model = ["embeddings"]
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from shadowdiff.commands.options import click_error, parse_labels, transport_click_options
from shadowdiff.errors import ConfigError
from shadowdiff.vocabulary import Side

if TYPE_CHECKING:   # (imported where the command runs: ``serve --help`` loads no store, aiohttp or SQLAlchemy)
    from shadowdiff.proxy.settings import ProxySettings


def _load_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
    if value is None:
        return None
    try:
        data = tomllib.loads(value.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"cannot read {value}: {exc}") from exc
    known = {p.name for p in ctx.command.params}
    unknown = sorted(set(data) - known)
    if unknown:
        raise click.BadParameter(f"{value}: unknown settings {', '.join(unknown)}")
    ctx.default_map = {**(ctx.default_map or {}), **data}
    return value


def _env(name: str) -> str:
    return "SHADOWDIFF_" + name.upper().replace("-", "_")


def option(*decls: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that also reads ``SHADOWDIFF_<NAME>``."""
    name = decls[0].lstrip("-")
    kwargs.setdefault("envvar", _env(name))
    kwargs.setdefault("show_envvar", True)
    return click.option(*decls, **kwargs)


@click.command("serve")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path), callback=_load_config,
              is_eager=True, expose_value=False, envvar="SHADOWDIFF_CONFIG", help="A TOML file of settings.")
@option("--primary", required=True, help="Base URL of the server whose answers clients get.")
@option("--shadow", default=None, help="Base URL of the server whose answers are only compared.")
@option("--primary-side", type=click.Choice([s.value for s in (Side.BASELINE, Side.CANDIDATE)]),
        default="baseline", show_default=True, help="Which side the primary is.")
@option("--primary-model", default=None, help="Rewrite the request's model for the primary (default: untouched).")
@option("--shadow-model", default=None, help="The model name the shadow serves.")
@option("--shadow-api-key", default=None, help="Bearer token for the shadow (default: the client's).")
@option("--replica", default=None,
        help="Base URL of a second baseline (or the baseline itself): its answers measure the noise floor.")
@option("--replica-model", default=None, help="The model name the replica serves (default: the baseline's).")
@option("--replica-rate", default=0.1, show_default=True,
        help="Share of comparable mirrored requests also sent to the replica.")
@option("--replica-api-key", default=None,
        help="Bearer token for the replica (default: the baseline's credentials).")
@option("--sample-rate", default=1.0, show_default=True, help="Share of requests mirrored.")
@option("--sample-header", default=None,
        help="Sample consistently by hashing this header (e.g. a session id).")
@option("--max-shadow-in-flight", default=64, show_default=True, help="Shadow requests in flight at most.")
@option("--shadow-timeout", default=120.0, show_default=True, help="Seconds for a whole shadow answer.")
@option("--connect-timeout", default=10.0, show_default=True, help="Seconds to connect upstream.")
@option("--primary-timeout", default=600.0, show_default=True,
        help="Seconds without a byte from the primary before the client gets a 504.")
@option("--max-mirror-body", default=1024 * 1024, show_default=True,
        help="Request bodies larger than this are forwarded but not mirrored.")
@option("--exclude-model", multiple=True, help="Never mirror requests for this model (repeatable).")
@option("--store", default="shadowdiff.sqlite", show_default=True, help="Store location (file, dir or URL).")
@option("--keep-rate", default=0.01, show_default=True,
        help="Share of identical and sampled pairs kept in the store (changed ones always are).")
@option("--near", default=0.9, show_default=True, help="Similarity from which a pair is 'near'.")
@option("--capture", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help="Write the requests seen to this OpenAI Batch JSONL file, for replay.")
@option("--capture-rate", default=1.0, show_default=True, help="Share of requests captured.")
@option("--capture-max-bytes", default=100 * 1024 * 1024, show_default=True, help="Rotate the capture past this.")
@option("--capture-keep", default=5, show_default=True, help="Rotated capture files kept.")
@option("--redact", multiple=True,
        help="A regular expression redacted from whatever is stored, captured or logged, besides the "
             "defaults (e-mail addresses, keys, tokens, credentials); repeatable.")
@option("--drain-timeout", default=30.0, show_default=True,
        help="At shutdown, seconds for in-flight streams and pending pairs to finish.")
@option("--label", multiple=True, metavar="KEY=VALUE",
        help="Recorded with the run: the conditions that move the noise floor (gpu=H100, vllm=0.34...).")
@option("--review-token", default=None,
        help="Serve the review UI under /review; this token (at least 8 characters) is the admin's, and "
             "reviewers sign in with their own (`shadowdiff reviewers add`).")
@option("--metrics-token", default=None,
        help="Answer /metrics only to `Authorization: Bearer` this token (at least 8 characters). Set it when "
             "reviewers can reach this port: the review series follow verdicts as they are given.")
@option("--alert-margin", default=0.05, show_default=True,
        help="Exported for the divergence alert: how far the divergence rate may rise above the noise floor.")
@option("--deployment", default=None,
        help="Name the run: every serve process given this name (and the same settings) on one store writes "
             "to one run, e.g. a Kubernetes Deployment's replicas (default: a run of this process and its "
             "workers).")
@option("--upstream-idle-timeout", default=4.0, show_default=True,
        help="Seconds an idle upstream connection is kept for reuse: keep it below the upstreams' own "
             "keep-alive timeout (vLLM: 5 s, VLLM_HTTP_TIMEOUT_KEEP_ALIVE).")
@option("--client-idle-timeout", default=75.0, show_default=True,
        help="Seconds an idle client connection is kept open for its next request: keep it above the "
             "clients' own (httpx, openai: 5 s) and a load balancer's idle timeout in front (AWS ALB: 60 s).")
@option("--store-queue", default=10_000, show_default=True,
        help="Pairs held in memory while the store fails; past this, pairs are dropped and counted.")
@option("--store-queue-bytes", default=64 * 1024 * 1024, show_default=True,
        help="Bytes of memory the pairs held while the store fails may take (estimated from their texts); "
             "past this, pairs are dropped and counted.")
@option("--store-timeout", default=10.0, show_default=True,
        help="Seconds any one database call may take (PostgreSQL: connect and statement timeout).")
@option("--retain", default=None, metavar="DURATION",
        help="Delete this deployment's stored pairs older than this (7d, 36h...), at start-up and every "
             "10 minutes; reviewed pairs, runs and their outcome counts are kept (default: keep every pair).")
@option("--score-rate", default=0.0, show_default=True, metavar="PAIRS_PER_SECOND",
        help="Teacher-forced scoring of greedy pairs (token agreement, cascades): at most this many pairs a "
             "second per process, after the client has its answer; 0 turns it off. Each scored pair costs the "
             "primary, the shadow (and the replica) a prefill of its prompt and answer, and the proxy ~16 ms "
             "of CPU per 1,000 tokens per server (docs/serve.md).")
@option("--pair-worker", default="auto", show_default=True, type=click.Choice(["auto", "process", "thread"]),
        help="Where each mirrored pair is read, compared, triaged and redacted: in a child process beside "
             "the proxy's (process), so that it never holds the event loop up, or in a thread of the proxy's "
             "own (thread); auto: a process where the proxy may run on two cores or more.")
@option("--workers", default=1, show_default=True, type=click.IntRange(1),
        help="uvicorn worker processes (metrics are summed across them).")
@option("--allow-same-target", is_flag=True,
        help="Allow the same server and model as primary and shadow (to measure its noise: the report says "
             "so). Without it that is refused, as a slip that would PASS.")
@transport_click_options
@option("--host", default="127.0.0.1", show_default=True, help="The address the proxy listens on.")
@option("--port", default=8080, show_default=True, help="The port the proxy listens on.")
@option("--log-level", default="warning", show_default=True, help="How much the proxy logs.",
        type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve(host: str, port: int, log_level: str, workers: int, **options: Any) -> None:
    """Mirror live traffic: forward to the primary, compare with the shadow."""
    from shadowdiff.proxy.server import run

    try:
        settings = settings_from_options(**options)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        run(settings, host=host, port=port, log_level=log_level, workers=workers)
    except ConfigError as exc:   # the port (in use, or not ours to take), --capture with --workers
        raise click_error(exc) from exc


def settings_from_options(*, capture: Path | None, capture_rate: float, capture_max_bytes: int,
                          capture_keep: int, redact: tuple[str, ...], label: tuple[str, ...],
                          exclude_model: tuple[str, ...], primary_side: str, retain: str | None = None,
                          **rest: Any) -> ProxySettings:
    from shadowdiff.proxy.settings import DEFAULT_REDACTIONS, CaptureSettings, ProxySettings
    from shadowdiff.store.prune import parse_duration

    return ProxySettings(
        retain=None if retain is None else parse_duration(retain, "--retain"),
        capture=CaptureSettings(capture, capture_rate, capture_max_bytes, capture_keep) if capture else None,
        redact=DEFAULT_REDACTIONS + tuple(redact), labels=parse_labels(label), exclude_models=tuple(exclude_model),
        primary_side=Side(primary_side), **rest)
