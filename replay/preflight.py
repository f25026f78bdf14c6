"""Before a replay: does every side answer, and does it serve the model it will be sent?

The two servers of a comparison usually serve different names for one model
(``Qwen/Qwen3-8B`` and ``Qwen/Qwen3-8B-FP8``), and a log names only one of them. A
replay that sends the log's name to both would record every pair of one side as a
404, minutes or hours later. So each side's ``/v1/models`` is asked first:

- a side that does not answer stops the run before it starts;
- a side given no ``--*-model`` that serves exactly one model gets that model, and
  the run says so (the mapping is recorded with the run's settings);
- a side that serves several models, none of them the one it would be sent, stops
  the run with the list, so that the right ``--*-model`` can be given.

Each side's ``/version`` (vLLM's) is recorded with the run too: a vLLM upgrade moves
the noise floor as surely as a new GPU.

A server whose ``/v1/models`` is missing or fails is not refused: some
OpenAI-compatible servers lack it, and the answers will tell.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import aiohttp

from shadowdiff.answers import baseurl
from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Upstream
from shadowdiff.answers.engineversion import engine_version
from shadowdiff.answers.redact import failure_text, public_url
from shadowdiff.errors import ConfigError
from shadowdiff.replay import logs
from shadowdiff.replay.runner import ReplaySettings


def log_model(settings: ReplaySettings, fmt: logs.LogFormat) -> str | None:
    """The model named by the log's first usable record, if any."""
    for item in logs.read(settings.log, fmt, turn=settings.turn, endpoint=settings.endpoint):
        if isinstance(item, logs.LogRecord):
            model = item.body.get("model")
            return model if isinstance(model, str) else None
    return None


def check_sides(settings: ReplaySettings, fmt: logs.LogFormat, warn: Callable[[str], None],
                timeout: float = 10.0) -> ReplaySettings:
    """``settings`` with each side's model settled (see the module docstring)."""
    for upstream in settings.upstreams:
        baseurl.check(f"--{upstream.side.value}", upstream.url)
    wanted = log_model(settings, fmt)

    async def ask_all() -> list[tuple[list[str] | None, str | None, bool]]:
        async with answers_session(2 * len(settings.upstreams), timeout) as session:
            return list(await asyncio.gather(*(_ask(session, u, timeout) for u in settings.upstreams)))

    answers = dict(zip([u.side for u in settings.upstreams], asyncio.run(ask_all()), strict=True))
    served = {side: models for side, (models, _, _) in answers.items()}
    # ReplaySettings fields: baseline, candidate, replica as mapped, the versions, the simulated sides
    sides: dict[str, Any] = {"servers": {side.value: version for side, (_, version, _) in answers.items()},
                             "simulated": tuple(side.value for side, (_, _, fake) in answers.items() if fake)}
    for upstream in settings.upstreams:
        models = served[upstream.side]
        model = upstream.model or wanted
        if models is None or model in models:
            continue
        if model is None and len(models) > 1:
            continue   # no name anywhere: the server answers with its default (vLLM: the first it serves)
        flag = f"--{upstream.side.value}-model"
        if upstream.model is None and len(models) == 1:
            sides[upstream.side.value] = dataclasses.replace(upstream, model=models[0])
            if model is not None:
                warn(f"the {upstream.side.value} serves {models[0]!r}, not the log's {model!r}: sending it "
                     f"{models[0]!r} ({flag} to choose)")
            continue
        where, names = f"the {upstream.side.value} at {public_url(upstream.url)}", ", ".join(map(repr, models))
        if upstream.model is not None:   # (named by the user: the name is what is wrong)
            raise ConfigError(f"{flag} {model!r} is not served by {where}, which serves {names}: give {flag} "
                              f"{models[0]!r}" + (" or another of them" if len(models) > 1 else ""))
        raise ConfigError(f"{where} serves {names}, and would be sent the log's {model!r}: give {flag} with the "
                          "one to send")
    return dataclasses.replace(settings, **sides)


async def _ask(session: aiohttp.ClientSession, upstream: Upstream,
               seconds: float) -> tuple[list[str] | None, str | None, bool]:
    """The models a side serves, its version (None where it does not say) and whether it is
    shadowdiff's simulator, each answer whole within ``seconds`` (the session bounds each
    read only: a server that drips its answer would hold the run before it began)."""
    headers = upstream.headers
    models = await _served(session, upstream, headers, seconds)
    version, simulated = await engine_version(session, upstream.endpoint("/version"), headers, seconds)
    return models, version, simulated


async def _served(session: aiohttp.ClientSession, upstream: Upstream, headers: dict[str, str],
                  seconds: float) -> list[str] | None:
    try:
        async with asyncio.timeout(seconds), session.get(upstream.endpoint("/v1/models"), headers=headers) as response:
            status = response.status
            listed = await response.read()
    except TimeoutError as exc:
        raise ConfigError(f"the {upstream.side.value} at {public_url(upstream.url)} does not answer "
                          f"(/v1/models not whole within {seconds:g} s): is it overloaded?") from exc
    except aiohttp.ClientError as exc:
        raise ConfigError(f"the {upstream.side.value} at {public_url(upstream.url)} does not answer "
                          f"({failure_text(exc)}): is it running?") from exc
    if status in (401, 403):
        raise ConfigError(f"the {upstream.side.value} at {public_url(upstream.url)} refused the API key "
                          f"(HTTP {status} on /v1/models)")
    if status != 200:
        return None
    try:
        return [str(m["id"]) for m in json.loads(listed)["data"]]
    except (ValueError, KeyError, TypeError):
        return None
