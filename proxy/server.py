"""Running the proxy under uvicorn."""

from __future__ import annotations

import math
import sys

import uvicorn

from proxy.app import build_app
from proxy.settings import ProxySettings


def uvicorn_config(settings: ProxySettings, *, host: str, port: int, log_level: str = "warning") -> uvicorn.Config:
    """uvicorn settings for the proxy: no headers of its own (the primary's pass through
    unchanged), graceful shutdown bounded by ``drain_timeout``."""
    return uvicorn.Config(
        build_app(settings), host=host, port=port, log_level=log_level, access_log=False,
        server_header=False, date_header=False, lifespan="on",
        # no X-Forwarded-* rewriting of the scope: it costs on every request, and the
        # proxy forwards headers as they came anyway
        proxy_headers=False,
        timeout_graceful_shutdown=math.ceil(settings.drain_timeout))


def run(settings: ProxySettings, *, host: str, port: int, log_level: str = "warning") -> None:
    """Serve until SIGTERM or SIGINT; in-flight streams finish, pending pairs are stored."""
    shadow = f", mirroring to {settings.shadow}" if settings.shadow else " (no shadow: pass-through only)"
    print(f"shadowdiff serve: http://{host}:{port} -> {settings.primary} ({settings.primary_side.value}){shadow}",
          file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn_config(settings, host=host, port=port, log_level=log_level)).run()
