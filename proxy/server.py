"""Running the proxy under uvicorn: one process, or several workers.

With ``--workers N`` uvicorn starts N processes that each build the app from the
settings the parent hands them (``SHADOWDIFF_SERVE_SETTINGS``, JSON), and the
Prometheus metrics switch to prometheus-client's multiprocess mode: every worker
writes its series to files in ``PROMETHEUS_MULTIPROC_DIR`` (a fresh temporary
directory unless one is given) and a scrape of any worker sums them all. The workers
write one run: without ``--deployment`` the parent names one for them. The parent
supervises them (``shadowdiff.proxy.supervisor``): a worker that dies is replaced, and marked lost
in the run at once, with the requests it held.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG, STARTUP_FAILURE

from shadowdiff.answers.redact import public_url
from shadowdiff.commands.listen import bind, check_forwarded, transport_options
from shadowdiff.errors import ConfigError
from shadowdiff.proxy.app import ProxyApp, build_app
from shadowdiff.proxy.httpprotocol import TargetKeepingProtocol
from shadowdiff.proxy.settings import ProxySettings, settings_from_json, settings_to_json
from shadowdiff.proxy.supervisor import Supervisor

SETTINGS_ENV = "SHADOWDIFF_SERVE_SETTINGS"


def log_config(settings: ProxySettings, log_level: str) -> dict[str, Any]:
    """uvicorn's logging, with every handler redacting what it writes (shadowdiff.answers.redact.
    LogRedaction: the patterns, and URLs' query strings) and writing its invisible characters
    as escapes (shadowdiff.answers.invisible.VisibleLogs: error texts quote servers), and the proxy's own logger, and
    anything that reaches the root (asyncio's "exception never retrieved"...), sent
    through the same handler rather than Python's bare last resort."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact": {"()": "shadowdiff.answers.redact.LogRedaction", "patterns": list(settings.redact)},
                         "visible": {"()": "shadowdiff.answers.invisible.VisibleLogs"},
                         "repeats": {"()": "shadowdiff.proxy.repeats.RepeatedWarnings"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact", "visible"]
    # a warning any client can set off: one line a minute, not one per connection
    # a warning any client can set off: one line a minute, not one per connection
    config["loggers"]["uvicorn.error"]["filters"] = ["repeats"]
    config["loggers"]["shadowdiff"] = {"handlers": ["default"], "level": log_level.upper(), "propagate": False}
    config["root"] = {"handlers": ["default"], "level": "WARNING"}
    return config


def _server_options(settings: ProxySettings, log_level: str) -> dict[str, Any]:
    return {
        "log_level": log_level, "log_config": log_config(settings, log_level), "access_log": False,
        "server_header": False, "date_header": False,
        "lifespan": "on",
        "http": TargetKeepingProtocol,   # a target's empty query is forwarded too
        "ws": "none",                    # HTTP only: see shadowdiff.proxy.httpprotocol
        "timeout_graceful_shutdown": math.ceil(settings.drain_timeout),
        "timeout_keep_alive": settings.client_idle_timeout,   # (uvicorn's 5 s: see the setting)
        # TLS, and X-Forwarded-* rewriting of the scope (the client's scheme and address)
        # only with --forwarded-allow-ips: it costs on every request, and only the review
        # UI looks (its cookies' Secure flag, its sign-in limit); the proxy forwards the
        # headers as they came either way. In the workers' config too: each loads them.
        **transport_options(settings.tls_cert, settings.tls_key, check_forwarded(settings.forwarded_allow_ips)),
    }


def uvicorn_config(settings: ProxySettings, *, host: str, port: int, log_level: str = "warning") -> uvicorn.Config:
    """uvicorn settings for the proxy: no headers of its own (the primary's pass through
    unchanged), graceful shutdown bounded by ``drain_timeout``."""
    return uvicorn.Config(build_app(settings), host=host, port=port, **_server_options(settings, log_level))


def app_from_environment() -> ProxyApp:
    """The app a worker process builds (uvicorn's factory, see ``run``)."""
    return build_app(settings_from_json(os.environ[SETTINGS_ENV]))


def _metrics_directory() -> None:
    """A clean multiprocess directory: files left by an earlier run would be summed in."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not given:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="shadowdiff-metrics-")
        return
    path = Path(given)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()


def _stopped(_sig: int, _frame: FrameType | None) -> None:
    """The signal uvicorn raises again after its graceful shutdown: already handled."""


def run(settings: ProxySettings, *, host: str, port: int, log_level: str = "warning", workers: int = 1) -> None:
    """Serve until SIGTERM or SIGINT; in-flight streams finish, pending pairs are stored."""
    shadow = f", mirroring to {public_url(settings.shadow)}" if settings.shadow else " (no shadow: pass-through only)"
    if workers > 1 and settings.capture is not None:
        raise ConfigError("--capture writes one file: run it with --workers 1")
    if workers > 1 and settings.retain is not None and settings.deployment is None:
        # the workers' run would get a new name at every start, which no later --retain prunes
        raise ConfigError("--retain with --workers needs --deployment NAME: the runs it prunes are that name's")
    sock = bind(host, port)      # before the banner: a busy port is one error line, not a banner and a failure
    print(f"shadowdiff serve: {settings.scheme}://{host}:{port} -> {public_url(settings.primary)} "
          f"({settings.primary_side.value}){shadow}"
          + (f", {workers} workers" if workers > 1 else ""), file=sys.stderr, flush=True)
    if workers == 1:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            _metrics_directory()     # given anyway: start from a clean one
        server = uvicorn.Server(uvicorn_config(settings, host=host, port=port, log_level=log_level))
        # uvicorn raises the signal it stopped for again once it is done, with the handlers
        # it found installed: under the default ones the process then dies of it (143), where
        # the workers' supervisor exits 0. One answer for both: a shutdown asked for and
        # carried out is a success.
        saved = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            server.run(sockets=[sock])
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        return
    created = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    _metrics_directory()
    if settings.deployment is None:
        # the workers are one deployment: they write one run
        settings = dataclasses.replace(settings, deployment=f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}")
    os.environ[SETTINGS_ENV] = settings_to_json(settings)
    try:
        # what uvicorn.run(workers=N) does, on the socket bound above
        config = uvicorn.Config("shadowdiff.proxy.server:app_from_environment", factory=True, host=host, port=port,
                                workers=workers, **_server_options(settings, log_level))
        supervisor = Supervisor(config, [sock], settings)
        supervisor.run()
        # a worker that could not start stops the supervisor, which then exits 0 on its
        # own: the same code as a lone process's failed start (uvicorn's convention)
        if any(worker.process.exitcode == STARTUP_FAILURE for worker in supervisor.processes):
            sys.exit(STARTUP_FAILURE)
    finally:
        if created:
            shutil.rmtree(os.environ.pop("PROMETHEUS_MULTIPROC_DIR"), ignore_errors=True)
