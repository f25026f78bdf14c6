"""Taking a server's port before announcing it (``serve``, ``review``, ``simulate``).

uvicorn binds its port only once it runs, after a command has printed where it serves
(and the review UI's sign-in token): a port already in use then showed the banner, a
token for a server that never ran, and uvicorn's own error lines. The commands bind
first with ``bind``, print, and hand the socket to uvicorn (``Server.run(sockets=…)``).
"""

from __future__ import annotations

import errno
import socket

from shadowdiff.errors import ConfigError


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (uvicorn listens on it), or a one-line ``ConfigError``."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    # as uvicorn does: a port left in TIME_WAIT by the last run can be taken again at once
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use (on {host}): stop what listens there, or give another "
                              "--port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)    # --workers: uvicorn's worker processes serve the same socket
    return sock
