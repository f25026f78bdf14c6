"""Taking a server's port before announcing it (``serve``, ``review``, ``simulate``), and
the options of how it is reached: TLS, and a trusted proxy's ``X-Forwarded-*`` headers.

uvicorn binds its port only once it runs, after a command has printed where it serves
(and the review UI's sign-in token): a port already in use then showed the banner, a
token for a server that never ran, and uvicorn's own error lines. The commands bind
first with ``bind``, print, and hand the socket to uvicorn (``Server.run(sockets=…)``).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import ssl
from typing import Any

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


# -- TLS and a trusted proxy's X-Forwarded-Proto (``serve`` and ``review``) -----------------

def check_tls(cert: str | None, key: str | None) -> None:
    """``--tls-cert`` and ``--tls-key``: both or neither, readable, and a certificate with its
    unencrypted key (checked here, so that a bad pair is one error line at start-up, not a
    traceback from each worker)."""
    if cert is None and key is None:
        return
    if cert is None or key is None:
        raise ConfigError("--tls-cert and --tls-key go together: give the certificate and its key")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise ConfigError(f"{flag} {path}: cannot read it ({exc.strerror or exc})") from None
    asked = []

    def no_password() -> bytes:
        asked.append(True)
        return b""

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key, password=no_password)
    except ssl.SSLError as exc:
        if asked:
            raise ConfigError(f"--tls-key {key} is encrypted: give its key unencrypted (readable only by the "
                              "server's user)") from None
        raise ConfigError(f"--tls-cert {cert} and --tls-key {key} are not a PEM certificate and its private key "
                          f"({exc.reason or exc})") from None


def check_forwarded(ips: str | None) -> str | None:
    """``--forwarded-allow-ips``: addresses and networks (comma-separated) or ``*``; None
    for none. Checked strictly: uvicorn takes what is not an address for a name to match
    literally, so a typo (or a network with host bits, ``10.0.0.1/8``) would trust nobody,
    silently."""
    if ips is None or not ips.strip():
        return None
    items = [item.strip() for item in ips.split(",")]
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item) if "/" in item else ipaddress.ip_address(item)
        except ValueError as exc:
            raise ConfigError(f"--forwarded-allow-ips: {item!r} is not an address or a network ({exc})") from None
    return ",".join(items)


def transport_options(cert: str | None, key: str | None, forwarded: str | None) -> dict[str, Any]:
    """uvicorn's options for them: TLS on the server's own port, and X-Forwarded-Proto and
    -For honoured from the given proxies only (uvicorn's default would trust 127.0.0.1, or
    whatever FORWARDED_ALLOW_IPS says, without being asked)."""
    options: dict[str, Any] = {"proxy_headers": forwarded is not None}
    if forwarded is not None:
        options["forwarded_allow_ips"] = forwarded
    if cert is not None:
        options.update(ssl_certfile=cert, ssl_keyfile=key)
    return options
