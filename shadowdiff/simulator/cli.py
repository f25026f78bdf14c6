"""``shadowdiff simulate``: command-line flags to ``SimulatorSettings``, then serve."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import click

from shadowdiff.commands.options import click_error
from shadowdiff.errors import ConfigError
from shadowdiff.simulator import faults, parsers, profiles
from shadowdiff.simulator.graded import DEFAULT_ACCURACY
from shadowdiff.simulator.scheduler import LATENCY_PRESETS
from shadowdiff.simulator.settings import SimulatorSettings


def settings_from_options(
    *, served_model_name: tuple[str, ...], model: str | None, profile: str,
    profile_file: Path | None, drift: tuple[str, ...], drift_seed: int | None,
    replica_rate: float | None, seed: int, max_model_len: int, max_logprobs: int,
    api_key: tuple[str, ...], latency: str, ttft: float | None, prefill_per_token: float | None,
    tpot: float | None, batch_slowdown: float | None, speed: float | None, max_num_seqs: int,
    fault: tuple[str, ...], fault_seed: int | None, fault_after_tokens: int,
    fault_hang_seconds: float, fault_slow_seconds: float, enable_request_id_headers: bool,
    sse_keep_alive_interval: float, default_temperature: float, reasoning_parser: str | None = None,
    enable_auto_tool_choice: bool = False, tool_call_parser: str | None = None, thinking: bool | None = None,
    quantization: str | None = None, accuracy: float = DEFAULT_ACCURACY,
) -> SimulatorSettings:
    """Build the settings; every flag is checked here so errors name the flag."""
    chosen = profiles.load(profile_file) if profile_file else profiles.builtin(profile)
    if drift:
        chosen = chosen.with_rates(dict(profiles.parse_drift(d) for d in drift))
    if drift_seed is not None:
        chosen = replace(chosen, drift_seed=drift_seed)
    if replica_rate is not None:
        chosen = replace(chosen, replica_rate=replica_rate)
    base = LATENCY_PRESETS[latency]
    overrides = {k: v for k, v in {
        "ttft": ttft, "prefill_per_token": prefill_per_token, "tpot": tpot,
        "batch_slowdown": batch_slowdown}.items() if v is not None}
    latency_model = replace(base, **overrides, speed=speed if speed is not None else chosen.speed,
                            max_num_seqs=max_num_seqs)
    fault_settings = faults.FaultSettings(
        rates=MappingProxyType(dict(faults.parse_fault(f) for f in fault)), seed=fault_seed,
        after_tokens=fault_after_tokens, hang_seconds=fault_hang_seconds,
        slow_seconds=fault_slow_seconds)
    return SimulatorSettings(
        served_model_names=served_model_name or (model or "simulated-model",), model=model,
        profile=chosen, seed=seed, max_model_len=max_model_len, max_logprobs=max_logprobs,
        api_keys=tuple(api_key) or _env_keys(), latency=latency_model, faults=fault_settings,
        enable_request_id_headers=enable_request_id_headers,
        sse_keep_alive_interval=sse_keep_alive_interval, default_temperature=default_temperature,
        # "none" means unset, as vLLM's parse_reasoning_parser reads it
        reasoning_parser=None if (reasoning_parser or "none").lower() == "none" else reasoning_parser,
        enable_auto_tool_choice=enable_auto_tool_choice, tool_call_parser=tool_call_parser, thinking=thinking,
        quantization=quantization, accuracy=accuracy,
    )


def _env_keys() -> tuple[str, ...]:
    key = os.environ.get("VLLM_API_KEY")
    return (key,) if key else ()


@click.command("simulate")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="The port to listen on.")
@click.option("--served-model-name", multiple=True, help="Name(s) the server answers to (repeatable).")
@click.option("--model", default=None, help="Checkpoint path shown as the model's root.")
@click.option("--profile", default="baseline", show_default=True,
              type=click.Choice(sorted(profiles.BUILTIN)), help="How answers drift from the baseline.")
@click.option("--profile-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A TOML profile (overrides --profile).")
@click.option("--drift", multiple=True, metavar="KIND=RATE",
              help=f"Override a drift rate; kinds: {', '.join(k.value for k in profiles.DriftKind)}.")
@click.option("--drift-seed", type=int, default=None, help="Reshuffle which prompts drift.")
@click.option("--replica-rate", type=float, default=None,
              help="Share of prompts a replica (--seed != 0) flips at a near-tie.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Server seed; a baseline with another seed is a replica.")
@click.option("--max-model-len", default=32768, show_default=True, type=int,
              help="The longest prompt plus answer, in tokens, as vLLM's --max-model-len (longer: 400).")
@click.option("--max-logprobs", default=20, show_default=True, type=int,
              help="The most logprobs a request may ask for, as vLLM's --max-logprobs (more: 400).")
@click.option("--api-key", multiple=True,
              help="Require this Bearer token on /v1 paths; repeat for several (default: $VLLM_API_KEY).")
@click.option("--latency", default="zero", show_default=True, type=click.Choice(sorted(LATENCY_PRESETS)),
              help="Latency preset; the flags below override its values.")
@click.option("--ttft", type=float, default=None, help="Seconds before the first token.")
@click.option("--prefill-per-token", type=float, default=None, help="Extra seconds per prompt token.")
@click.option("--tpot", type=float, default=None, help="Seconds per output token at batch size 1.")
@click.option("--batch-slowdown", type=float, default=None,
              help="Per-token time grows by this fraction per extra running sequence.")
@click.option("--speed", type=float, default=None, help="Divides every delay (default: the profile's).")
@click.option("--max-num-seqs", default=256, show_default=True, type=int,
              help="Running batch size; further requests queue.")
@click.option("--fault", multiple=True, metavar="KIND=RATE",
              help=f"Inject a fault; kinds: {', '.join(f.value for f in faults.Fault)}.")
@click.option("--fault-seed", type=int, default=None, help="Make the fault draws reproducible.")
@click.option("--fault-after-tokens", default=3, show_default=True, type=int,
              help="Mid-stream faults strike after this many tokens.")
@click.option("--fault-hang-seconds", default=3600.0, show_default=True, type=float,
              help="How long a request the hang fault picked waits before it answers.")
@click.option("--fault-slow-seconds", default=0.5, show_default=True, type=float,
              help="Seconds between tokens for the slow fault.")
@click.option("--enable-request-id-headers", is_flag=True, help="Echo X-Request-Id in responses.")
@click.option("--sse-keep-alive-interval", default=0.0, show_default=True, type=float,
              help="Send ': keep-alive' comments during pauses longer than this (0: off).")
@click.option("--default-temperature", default=1.0, show_default=True, type=float,
              help="Temperature for requests that send none (vLLM's default without "
                   "a generation config is 1.0).")
@click.option("--reasoning-parser", default=None, metavar="NAME",
              help="Split the thinking into message.reasoning as vLLM's parser NAME does "
                   f"({', '.join(parsers.REASONING_PARSERS)}); also makes the model think.")
@click.option("--enable-auto-tool-choice", is_flag=True,
              help="Let the model call the tools a chat request offers (needs --tool-call-parser).")
@click.option("--tool-call-parser", default=None, metavar="NAME",
              help=f"Read tool calls as vLLM's parser NAME does ({', '.join(parsers.TOOL_PARSERS)}).")
@click.option("--thinking/--no-thinking", default=None,
              help="Whether the model writes <think>...</think> before each chat answer, as Qwen3 "
                   "does (default: with --reasoning-parser). --thinking alone leaves the thinking "
                   "inside content, as vLLM does without a reasoning parser.")
@click.option("--quantization", default=None, metavar="METHOD",
              help="Quantization the server reports through system_fingerprint (default: the "
                   "profile's: fp8 for the fp8 profiles, none for baseline).")
@click.option("--accuracy", default=DEFAULT_ACCURACY, show_default=True, type=click.FloatRange(0.0, 1.0),
              help="Share of gradable questions (the gradable workload's arithmetic, dates, unit "
                   "conversions, counting and multiple choice, and plain questions such as 'What is "
                   "17 + 25?') the baseline answers right, chosen per question by a stable hash. Give "
                   "the candidate the same value: its number drift flips answers relative to it.")
@click.option("--log-level", default="warning", show_default=True, help="How much the server logs.",
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def simulate(host: str, port: int, log_level: str, **options: object) -> None:
    """Serve a simulated vLLM OpenAI server (a test double: its text is synthetic).

    It speaks vLLM 0.34's wire format, answers deterministically at temperature 0,
    and with --profile fp8 makes a configurable share of answers differ from the
    baseline's the way FP8 answers do. Ready when GET /health answers 200.

    As a Qwen3 deployment: --reasoning-parser qwen3 --enable-auto-tool-choice
    --tool-call-parser hermes (the model thinks before each chat answer and calls the
    tools a request offers).
    """
    from shadowdiff.simulator.server import serve

    try:
        settings = settings_from_options(**options)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        serve(settings, host=host, port=port, log_level=log_level)
    except ConfigError as exc:   # the port: in use, or not ours to take
        raise click_error(exc) from exc
