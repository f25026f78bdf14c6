"""What engine a server is: its version, from vLLM's ``GET /version``, and whether it is
shadowdiff's simulator (its ``/version`` says so in a header no real engine sends).

Asked by replay's preflight and by ``serve`` at start-up, and recorded with the run, so
that a report names the engines it compared and says SIMULATED of a run that had no model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp

from shadowdiff.vocabulary import SIMULATOR_HEADER


async def engine_version(session: aiohttp.ClientSession, url: str, headers: Mapping[str, str] | None = None,
                         seconds: float = 2.0) -> tuple[str | None, bool]:
    """The version ``url`` (a server's ``/version``) gives, whole within ``seconds`` (None
    from a server without one, or that does not answer in time: llama.cpp, SGLang and TGI
    have none), and whether the server is shadowdiff's simulator."""
    try:
        async with asyncio.timeout(seconds), session.get(url, headers=headers) as response:
            simulated = response.headers.get(SIMULATOR_HEADER) == "1"
            body = await response.json(content_type=None) if response.status == 200 else None
    except (aiohttp.ClientError, ValueError, TimeoutError):
        return None, False
    version = body.get("version") if isinstance(body, dict) else None
    return (version if isinstance(version, str) else None), simulated
