"""uvicorn's warnings that any client can set off, one line per window instead of one
per connection.

uvicorn logs "Invalid HTTP request received." for every request its parser refuses, and
answers it 400 itself: a scanner, a load balancer speaking another protocol or a broken
client writes a warning line per connection (189 lines for 1,000 malformed requests),
which buries the proxy's own lines and can fill a disk. ``RepeatedWarnings`` lets the
first such line through, then at most one per ``WINDOW`` seconds, each saying how many
like it were left out since the last one shown. It is a filter on the ``uvicorn.error``
logger (``shadowdiff.proxy.server``'s logging configuration), so every worker has its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

# What uvicorn's HTTP protocols log at WARNING on a client's bytes alone.
CLIENT_CAUSED = frozenset({
    "Invalid HTTP request received.",
    "Unsupported upgrade request.",
    "No supported WebSocket library detected. Please use \"pip install 'uvicorn[standard]'\", or install "
    "'websockets' or 'wsproto' manually.",
})
WINDOW = 60.0   # seconds between two lines of the same warning


class RepeatedWarnings(logging.Filter):
    def __init__(self, window: float = WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self.clock = clock
        self._shown: dict[str, float] = {}    # a warning's text: when it was last let through
        self._left_out: dict[str, int] = {}   # ... and how many were held back since
        self._lock = threading.Lock()          # (uvicorn logs from the event loop, but a filter may be shared)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.msg if isinstance(record.msg, str) else None
        if text not in CLIENT_CAUSED or record.args:
            return True
        now = self.clock()
        with self._lock:
            last = self._shown.get(text)
            if last is not None and now - last < self.window:
                self._left_out[text] = self._left_out.get(text, 0) + 1
                return False
            self._shown[text] = now
            left_out = self._left_out.pop(text, 0)
            if left_out and last is not None:
                record.msg = f"{text} ({left_out} more like it in the last {now - last:.0f} s were not logged)"
        return True
