"""Whether two sides of a comparison are one server asked for one model.

A baseline compared with itself agrees on every answer, and the run would PASS on no
evidence about any candidate: ``replay``, ``compare`` and ``serve`` refuse it unless asked
(``--allow-same-target``), and the report says so of a run that was allowed. One server
is written many ways - ``http://localhost:8000``, ``http://127.0.0.1:8000/v1/``,
``http://0.0.0.0:8000`` - and all of them are the same address here.
"""

from __future__ import annotations

import ipaddress
import posixpath
import socket
from urllib.parse import urlsplit


def _address(url: str) -> tuple[str, frozenset[str], int | None, str]:
    """A base URL as what tells two servers apart: scheme, host, port (the scheme's own
    when left out) and path. The host as the addresses it resolves to (``localhost`` is
    ``127.0.0.1``; a name that does not resolve, as itself, without case); the path
    without ``.`` segments, a trailing slash or the ``/v1`` shadowdiff adds anyway."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"http": 80, "https": 443}.get(scheme)
    path = posixpath.normpath(parts.path or "/").rstrip("/")
    path = path[:-3] if path.endswith("/v1") else path
    return scheme, _host_addresses(parts.hostname or ""), port, path.lstrip("/")


def _host_addresses(host: str) -> frozenset[str]:
    """The addresses ``host`` resolves to, as one machine sees them: an IPv4-mapped IPv6
    address as its IPv4 one, and every loopback or unspecified address (``127.0.0.2``,
    ``0.0.0.0``, ``::``, which a client's connection reaches this machine through) as
    ``loopback``."""
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        found = set()
    return frozenset(_as_machine(a) for a in found) or frozenset({host.lower()})


def _as_machine(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return "loopback" if ip.is_loopback or ip.is_unspecified else str(ip)


def same_target(a_url: str, a_model: str | None, b_url: str, b_model: str | None) -> bool:
    """Whether two sides are one server asked for one model: one address (``_address``:
    the same scheme, port and path, and a host address in common) and the same model name
    (None, the server's default, only matches None). One server that serves two models
    (adapters, a gateway) is two targets."""
    (scheme_a, hosts_a, port_a, path_a), (scheme_b, hosts_b, port_b, path_b) = _address(a_url), _address(b_url)
    return (scheme_a, port_a, path_a) == (scheme_b, port_b, path_b) and bool(hosts_a & hosts_b) and a_model == b_model
