"""The pair process: a child of the proxy's that makes its pairs, beside its event loop.

Comparing, triaging and redacting a changed pair costs several times what forwarding its
request does, and in the proxy's process it holds the interpreter's lock while the event
loop waits for it: a client's request arriving then waits too. In a process of its own
it runs on another core, if there is one, with a lock of its own. ``--pair-worker``
chooses (``auto``: a process where the proxy may run on two cores or more, else the pairs'
thread does the work itself).

The pairs' thread (``shadowdiff.proxy.pairwork``) hands the process a batch of
``PairInputs`` and waits for their ``Made`` (or ``PairFailed``) over a socket pair, with
``multiprocessing``'s framing and pickling; the proxy's metrics and store stay with the
proxy. The child ignores Ctrl-C (the proxy stops it once its pairs are drained) and ends
when its socket closes, which is also what the proxy's death does to it.

A child that dies or takes longer than ``BATCH_TIMEOUT`` over a batch is killed; its
batch is tried again one pair at a time in a new child, so that a pair that kills it
(memory, a C library's crash) fails alone, counted as the proxy's failure
(``proxy_failed``) and logged, and never takes the proxy with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from shadowdiff.answers.redact import failure_text
from shadowdiff.errors import ShadowdiffError
from shadowdiff.proxy.pairmaking import Made, Maker, MakerSettings, PairInputs

log = logging.getLogger("shadowdiff.proxy")

START_TIMEOUT = 60.0    # seconds for a new child to be ready (it imports the comparison and the triage)
BATCH_TIMEOUT = 120.0   # seconds for a batch's pairs at most (a 1 MB pair takes well under one)
BATCH_BYTES = 16 * 2**20   # requests' and answers' bytes handed over at once, at most (one pair may be more)
# Children started within RESTART_WINDOW seconds, at most: past it the process is given up on
# (``PairProcessUnavailable``: the thread makes the pairs) rather than restarted in a loop,
# each start a second of CPU, by a child that cannot work here (a broken install, a
# package upgraded under the running proxy).
MAX_STARTS = 6
RESTART_WINDOW = 60.0
NICE = 10               # as the pairs' thread: the scheduler lets the proxy's event loop preempt it
_READY = "ready"


class PairFailed(ShadowdiffError):
    """A pair the pair process could not make: why, in one line (never the pair's text)."""


class PairProcessError(ShadowdiffError):
    """The pair process died or hung over a batch."""


class PairProcessUnavailable(PairProcessError):
    """No pair process could be started (or it is closed)."""


def wanted(choice: str) -> bool:
    """Whether ``--pair-worker`` ``choice`` means a process: ``process``, or ``auto`` where the
    proxy may run on two cores or more (``usable_cores``)."""
    if choice != "auto":
        return choice == "process"
    return usable_cores() >= 2


def usable_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> float:
    """The cores this process may run on: those of its CPU affinity, or fewer if its
    container's CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``) allows less - a
    pod limited to one CPU on a 64-core node is one core, where a second process would
    only take the proxy's time slices."""
    try:
        cores: float = len(os.sched_getaffinity(0))
    except AttributeError:    # (not Linux)
        cores = os.cpu_count() or 1
    for quota_file, period_file in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:
            words = (cgroup / quota_file).read_text().split()
            if period_file is not None:
                words.append((cgroup / period_file).read_text().strip())
            quota, period = int(words[0]), int(words[1])
        except (OSError, ValueError, IndexError):    # no such file, or "max": no quota
            continue
        if quota > 0 and period > 0:
            return min(cores, quota / period)
    return cores


class PairProcess:
    """One child making pairs; ``make`` is called from one thread only (the pairs' thread)."""

    def __init__(self, settings: MakerSettings, on_restart: Callable[[], None] | None = None) -> None:
        self.settings = settings
        self.on_restart = on_restart
        self.restarts = 0       # children started after the first
        self._started = 0
        self._starts: list[float] = []   # when the children of the last RESTART_WINDOW started
        self._child: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._socket: socket.socket | None = None   # the connection's, to end what is sent to the child
        self._closed = False
        self._lock = threading.Lock()   # (close() from the event loop's thread, at shutdown)

    def make(self, pairs: list[PairInputs]) -> list[Made | PairFailed]:
        """The pairs made, in order, handed over in batches of at most ``BATCH_BYTES``."""
        made: list[Made | PairFailed] = []
        batch: list[PairInputs] = []
        held = 0
        for inputs in pairs:
            if batch and held + inputs.size > BATCH_BYTES:
                made += self._batch(batch)
                batch, held = [], 0
            batch.append(inputs)
            held += inputs.size
        return made + self._batch(batch) if batch else made

    def _batch(self, batch: list[PairInputs]) -> list[Made | PairFailed]:
        """The batch's pairs, in order. A child that fails over a batch is replaced, and
        the batch tried again pair by pair; ``PairProcessUnavailable`` if no child can start."""
        try:
            return self._exchange(batch)
        except PairProcessUnavailable:
            raise
        except PairProcessError as exc:
            if len(batch) == 1:
                return [PairFailed(f"the pair process failed over this pair: {exc}")]
            log.warning("the pair process failed over a batch of %d pairs (%s); trying them one by one",
                        len(batch), exc)
        made: list[Made | PairFailed] = []
        for inputs in batch:
            try:
                made += self._exchange([inputs])
            except PairProcessUnavailable:
                raise
            except PairProcessError as exc:
                log.error("a pair could not be made: the pair process failed over it (%s %s): %s",
                          inputs.path, inputs.key, exc)
                made.append(PairFailed(f"the pair process failed over this pair: {exc}"))
        return made

    def _exchange(self, batch: list[PairInputs]) -> list[Made | PairFailed]:
        conn = self._connection()
        try:
            data = pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:   # (nothing written: the child is fine)
            return [PairFailed(f"the pair could not be handed to the pair process: {failure_text(exc)}")] * len(batch)
        try:
            conn.send_bytes(data)
            del data
            if not conn.poll(BATCH_TIMEOUT):
                raise TimeoutError(f"no answer within {BATCH_TIMEOUT:g} s")
            made: list[Made | PairFailed] = pickle.loads(conn.recv_bytes())
        except (OSError, EOFError, TimeoutError, pickle.UnpicklingError) as exc:
            code = self._stop(kill=True)
            why = failure_text(exc) if code is None else f"it exited with status {code}"
            raise PairProcessError(why) from exc
        return made

    def _connection(self) -> Connection:
        if self._conn is not None and self._child is not None and self._child.poll() is None:
            return self._conn
        self._stop(kill=True)
        with self._lock:
            if self._closed:
                raise PairProcessUnavailable("the proxy is stopping")
            now = time.monotonic()
            self._starts = [at for at in self._starts if now - at < RESTART_WINDOW] + [now]
            if len(self._starts) > MAX_STARTS:
                raise PairProcessUnavailable(f"it failed {MAX_STARTS} times within {RESTART_WINDOW:g} s")
            ours, theirs = socket.socketpair()
            try:
                # (the proxy's own module path: the child imports what the proxy runs, however it was started)
                path = os.pathsep.join(p for p in sys.path if p)
                self._child = subprocess.Popen(
                    [sys.executable, "-m", "shadowdiff.proxy.pairprocess", str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path})
            except OSError as exc:
                ours.close()
                raise PairProcessUnavailable(f"cannot start it: {failure_text(exc)}") from exc
            finally:
                theirs.close()
            self._socket, self._conn = ours, Connection(os.dup(ours.fileno()))
            if self._started:
                self.restarts += 1
                if self.on_restart is not None:
                    self.on_restart()
            self._started += 1
        try:
            self._conn.send(self.settings)
            if not self._conn.poll(START_TIMEOUT) or self._conn.recv() != _READY:
                raise TimeoutError(f"not ready within {START_TIMEOUT:g} s")
        except (OSError, EOFError, TimeoutError) as exc:
            code = self._stop(kill=True)
            why = failure_text(exc) if code is None else f"it exited with status {code}"
            raise PairProcessUnavailable(f"it did not start ({why})") from exc
        return self._conn

    def _stop(self, kill: bool) -> int | None:
        """Close the child's socket (it then ends), killing it first with ``kill``; its exit status, if it had one."""
        with self._lock:
            child, conn, sock = self._child, self._conn, self._socket
            self._child, self._conn, self._socket = None, None, None
        if child is None:
            return None
        code = child.poll()
        if kill and code is None:
            child.kill()
        for end in (conn, sock):
            if end is not None:
                end.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(5.0)
        return code

    def close(self, timeout: float = 5.0) -> None:
        """End the child once it has made what it was given, within ``timeout`` seconds
        (0: at once, what it was making is for no one now); no other starts after it."""
        with self._lock:
            self._closed = True
            child, sock = self._child, self._socket
        if child is None:
            return
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)   # the child reads the end, after the batch in hand
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout)
        # (killed first if still there: a pairs' thread waiting on its answer then reads the end)
        self._stop(kill=True)


def _serve(conn: Connection) -> None:
    maker = Maker(conn.recv())
    conn.send(_READY)
    while True:
        try:
            data = conn.recv_bytes()
        except EOFError:
            return
        batch: list[PairInputs] = pickle.loads(data)
        del data
        conn.send_bytes(pickle.dumps([_made(maker, inputs) for inputs in batch], pickle.HIGHEST_PROTOCOL))


def _made(maker: Maker, inputs: PairInputs) -> Made | PairFailed:
    try:
        return maker.make(inputs)
    except Exception as exc:   # one pair's failure is that pair's: the proxy counts and logs it
        return PairFailed(failure_text(exc))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # (the proxy drains its pairs, then closes the socket)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, max(NICE, os.getpriority(os.PRIO_PROCESS, 0)))
    conn = Connection(int(sys.argv[1]))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):   # the proxy went away
        _serve(conn)


if __name__ == "__main__":
    main()
