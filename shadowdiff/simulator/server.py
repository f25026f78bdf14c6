"""Running the simulator under uvicorn (SIGTERM and SIGINT shut it down cleanly)."""

from __future__ import annotations

import sys

import uvicorn

from shadowdiff.commands.listen import bind
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings


def serve(settings: SimulatorSettings, *, host: str, port: int, log_level: str = "warning") -> None:
    """Serve until SIGTERM or SIGINT; in-flight requests finish first (uvicorn's default)."""
    app = build_app(settings)
    latency = settings.latency
    sock = bind(host, port)      # before the banner: a busy port is one error line, not a banner and a failure
    print(
        f"shadowdiff simulate: {', '.join(settings.served_model_names)} "
        f"(profile {settings.profile.name}, seed {settings.seed}, speed {latency.speed:g}x) "
        f"on http://{host}:{port} - a test double of vLLM {settings.version}, not a model",
        file=sys.stderr, flush=True,
    )
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=10)
    uvicorn.Server(config).run(sockets=[sock])
