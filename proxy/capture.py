"""The capture log: requests the proxy sees, as OpenAI Batch JSONL, for ``shadowdiff replay``.

Lines are ``{"custom_id", "method": "POST", "url", "body"}`` - vLLM's ``run-batch``
input, which ``replay`` reads. Requests are sampled, kept as the store keeps them
(without ``api_key`` and ``user``, redacted: ``shadowdiff.answers.redact``), and written by a
background thread; the file is rotated past ``max_bytes`` (``capture.jsonl`` →
``capture.jsonl.1`` …). Headers are never written, so an Authorization header cannot
end up in a capture; the ``custom_id`` is the pair's key, redacted like the rest.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import threading
from pathlib import Path
from typing import Any, cast

import orjson

from shadowdiff.answers.redact import Redactor
from shadowdiff.proxy.settings import CaptureSettings

_STOP = object()


class Capture:
    def __init__(self, settings: CaptureSettings, redactor: Redactor) -> None:
        self.settings = settings
        self.redactor = redactor
        self.written = 0
        self.dropped = 0
        self._rng = random.Random()
        self._queue: queue.Queue[object] = queue.Queue(maxsize=10_000)
        settings.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = settings.path.open("ab")
        self._size = self._file.tell()
        self._thread = threading.Thread(target=self._run, name="shadowdiff-capture", daemon=True)
        self._thread.start()

    def offer(self, key: str, path: str, body: dict[str, Any], secrets: tuple[str, ...] = ()) -> None:
        """Capture this request if it is sampled; never blocks the caller."""
        if self._rng.random() >= self.settings.sample_rate:
            return
        try:
            self._queue.put_nowait((key, path, body, secrets))
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued (for up to ``timeout`` seconds) and close the file."""
        if self._thread.is_alive():
            with contextlib.suppress(queue.Full):
                self._queue.put(_STOP, timeout=timeout)
            self._thread.join(timeout)
        self._file.close()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            key, path, body, secrets = cast(tuple[str, str, dict[str, Any], tuple[str, ...]], item)
            try:
                line = orjson.dumps({"custom_id": key, "method": "POST", "url": path,
                                     "body": self.redactor.with_literals(secrets).request(body)}) + b"\n"
            except (TypeError, RecursionError, orjson.JSONEncodeError):
                self.dropped += 1  # a request nested too deep to write back: skipped, the rest goes on
                continue
            if self._size and self._size + len(line) > self.settings.max_bytes:
                self._rotate()
            self._file.write(line)
            self._file.flush()
            self._size += len(line)
            self.written += 1

    def _rotate(self) -> None:
        self._file.close()
        path = self.settings.path
        for i in range(self.settings.keep - 1, 0, -1):
            older = Path(f"{path}.{i}")
            if older.exists():
                os.replace(older, f"{path}.{i + 1}")
        os.replace(path, f"{path}.1")
        self._file = path.open("ab")
        self._size = 0
