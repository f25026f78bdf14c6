"""A limit on failed sign-ins, so that the review token cannot be guessed at speed.

Each client address may fail ``per_client`` times in ``window`` seconds (a sliding
window: the oldest failure must age out before another try); all clients together
``overall`` times, which bounds a guess spread over many addresses. Past either
limit every sign-in is refused until the window allows it again, **the right token
included**: were it let through, a guesser would only have to keep trying until the
lockout happened to lift for a correct guess, and the limit would bound nothing.

The price of the overall limit: anyone who can reach the sign-in form can keep new
sign-ins out for a window (sessions already open go on working). Addresses are
those the server sees: with ``--forwarded-allow-ips`` the client's, from
``X-Forwarded-For``, else the connecting one (behind a proxy that is not trusted, all
reviewers share the proxy's address, and its limit). IPv6 addresses count by their
/64, which one machine usually holds whole. The table is capped: past ``max_clients``
addresses the one that failed longest ago is forgotten (the overall limit still
counts its failures). Each process keeps its own table: with ``--workers N`` or N
replicas the limits are N times as loose.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Lockout:
    """Sign-ins are refused for ``seconds`` more; ``everyone``: by the overall limit."""

    seconds: int
    everyone: bool

    def message(self) -> str:
        minutes = math.ceil(self.seconds / 60)
        when = f"{self.seconds} seconds" if self.seconds < 120 else f"{minutes} minutes"
        who = "from all addresses together" if self.everyone else "from your address"
        return (f"Too many failed sign-ins {who}: sign-in is locked for {when}, the right token included. "
                f"Try again after that.")


class SignInLimit:
    def __init__(self, per_client: int = 10, overall: int = 100, window: float = 300.0,
                 max_clients: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window = window
        self.max_clients = max_clients
        self.clock = clock
        self._clients: OrderedDict[str, deque[float]] = OrderedDict()
        self._all: deque[float] = deque(maxlen=overall)
        # sign-ins run on the event loop, but nothing here must assume one thread
        self._lock = threading.Lock()

    def locked(self, client: str | None) -> Lockout | None:
        """Whether ``client`` must be refused now, and for how long."""
        now = self.clock()
        with self._lock:
            everyone = self._until(self._all, self.overall, now)
            failures = self._clients.get(_key(client))
            mine = self._until(failures, self.per_client, now) if failures is not None else 0.0
        if max(everyone, mine) <= 0:
            return None
        return Lockout(math.ceil(max(everyone, mine)), everyone >= mine)

    def failed(self, client: str | None) -> None:
        now = self.clock()
        key = _key(client)
        with self._lock:
            self._all.append(now)
            failures = self._clients.pop(key, None) or deque(maxlen=self.per_client)
            failures.append(now)
            self._clients[key] = failures        # (last: the most recent failure)
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)

    def _until(self, failures: deque[float], limit: int, now: float) -> float:
        """Seconds until ``failures`` (at most ``limit`` kept) fall below ``limit`` in the window."""
        if len(failures) < limit:
            return 0.0
        return failures[0] + self.window - now


def _key(client: str | None) -> str:
    if not client:
        return ""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client       # (not an address: a unix socket's path, a test client's name)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)
