"""The pair process: a child of the proxy's that makes its pairs, beside its event loop.

Comparing, triaging and redacting a changed pair costs several times what forwarding its
request does, and in the proxy's process it holds the interpreter's lock while the event
loop waits for it: a client's request arriving then waits too. In a process of its own
it runs on another core, if there is one, with a lock of its own. ``--pair-worker``
chooses (``auto``: a process where the proxy may run on two cores or more, else the pairs'
thread does the work itself).

The pairs' thread (``shadowdiff.proxy.pairwork``) hands the process a batch of
``PairInputs`` and waits for their ``Made`` (or ``PairFailed``) over a socket pair, each
pair pickled on its own: one that cannot be (a request nested deeper than pickling
recurses) is ``MakeHere``, made by the thread as it is without a process, and costs the
others nothing. The proxy's metrics and store stay with the proxy. The child also calls
the shadow for the proxy, on a second socket pair (``shadowdiff.proxy.shadowcalls``), when
the proxy gives it the settings to (``calls``).

The child is started with the proxy (``start``) and again whenever one has died, and
until it is ready the thread makes the pairs itself: neither the start nor a restart
stops mirroring. A child that dies or takes longer than ``BATCH_TIMEOUT`` over a batch is
killed; its batch is tried again one pair at a time in a new child (waited for: a pair
that may kill a process is never made in the proxy's), so that a pair that kills it
(memory, a C library's crash) fails alone, counted as the proxy's failure
(``proxy_failed``) and logged, and never takes the proxy with it. At most ``MAX_STARTS``
children start within ``RESTART_WINDOW``; past that the thread makes the pairs until the
window has room again.

The child ignores SIGINT and SIGTERM (a terminal's Ctrl-C and a service manager's stop
reach the whole process group; the proxy drains its pairs, then closes the socket) and
ends when its socket closes, or when the proxy dies (Linux: ``PR_SET_PDEATHSIG``). It is
started with the proxy's own module path and without the working directory in front of
it (``-P``): it runs the code the proxy runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
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
from typing import TYPE_CHECKING

from shadowdiff.answers.redact import failure_text
from shadowdiff.errors import ShadowdiffError
from shadowdiff.proxy.pairmaking import Made, Maker, MakerSettings, PairInputs

if TYPE_CHECKING:
    from shadowdiff.proxy.settings import ProxySettings

log = logging.getLogger("shadowdiff.proxy")

START_TIMEOUT = 30.0    # seconds for a new child to be ready (it imports the comparison and the triage)
BATCH_TIMEOUT = 30.0    # seconds for a batch's pairs at most (a 1 MB pair takes well under one)
BATCH_BYTES = 16 * 2**20   # requests' and answers' bytes handed over at once, at most (one pair may be more)
# Children started within RESTART_WINDOW seconds, at most: past it the thread makes the
# pairs until the window has room, rather than a child restarted in a loop, each start a
# second of CPU (a broken install, a package upgraded under the running proxy).
MAX_STARTS = 6
RESTART_WINDOW = 300.0
NICE = 10               # as the pairs' thread: the scheduler lets the proxy's event loop preempt it
# seconds a thread waiting for the interpreter's lock waits before asking for it (Python's: 0.005):
# the proxy's, set when the pairs' thread starts, and the child's, whose thread calling the shadow
# stamps its answer's arrivals; only lock contention makes it cost anything
SWITCH_INTERVAL = 0.00005
_READY = "ready"
INCOMPLETE = 3     # the child's exit status when the pairs it stored itself were not all written at the end
_PR_SET_PDEATHSIG = 1


class PairFailed(ShadowdiffError):
    """A pair the pair process could not make: why, in one line (never the pair's text)."""


class MakeHere(PairFailed):
    """A pair the pair process was not given, or could not give back (it does not pickle):
    the pairs' thread makes it, as it does without a process."""


class PairProcessError(ShadowdiffError):
    """The pair process died or hung over a batch."""


class PairProcessUnavailable(PairProcessError):
    """No pair process is ready: starting, failing to start, or closed. The thread makes the pairs."""


class Starting(PairProcessUnavailable):
    """The child is starting: the thread makes the pairs meanwhile."""


def wanted(choice: str) -> bool:
    """Whether ``--pair-worker`` ``choice`` means a process: ``process``, or ``auto`` where the
    proxy may run on two cores or more (``usable_cores``)."""
    if choice != "auto":
        return choice == "process"
    return usable_cores() >= 2


def usable_cores(cgroup: Path = Path("/sys/fs/cgroup"), own: Path = Path("/proc/self/cgroup")) -> float:
    """The cores this process may run on: those of its CPU affinity, or fewer if the CPU
    quota of its cgroup allows less (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``; of its own
    cgroup, as ``own`` names it, else the root one a container sees) - a pod limited to one
    CPU on a 64-core node, or a systemd unit with ``CPUQuota=100%``, is one core, where a
    second process would only take the proxy's time slices."""
    try:
        cores: float = len(os.sched_getaffinity(0))
    except AttributeError:    # (not Linux)
        cores = os.cpu_count() or 1
    places: list[tuple[Path, Path | None]] = []
    with contextlib.suppress(OSError):
        for line in own.read_text().splitlines():    # "0::/system.slice/x.service", "4:cpu,cpuacct:/x"
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                places.append((cgroup / path.lstrip("/") / "cpu.max", None))
            elif "cpu" in controllers.split(","):
                where = cgroup / "cpu" / path.lstrip("/")
                places.append((where / "cpu.cfs_quota_us", where / "cpu.cfs_period_us"))
    places += [(cgroup / "cpu.max", None), (cgroup / "cpu/cpu.cfs_quota_us", cgroup / "cpu/cpu.cfs_period_us")]
    for quota_file, period_file in places:
        try:
            words = quota_file.read_text().split()
            if period_file is not None:
                words.append(period_file.read_text().strip())
            quota, period = int(words[0]), int(words[1])
        except (OSError, ValueError, IndexError):    # no such file, or "max": no quota
            continue
        if quota > 0 and period > 0:
            return min(cores, quota / period)
    return cores


class PairProcess:
    """One child making pairs; ``make`` is called from one thread only (the pairs' thread)."""

    def __init__(self, settings: MakerSettings, on_restart: Callable[[], None] | None = None,
                 calls: ProxySettings | None = None, on_spawn: Callable[[socket.socket], None] | None = None) -> None:
        self.settings = settings
        self.on_restart = on_restart
        # with ``calls``, the child also calls the shadow (``shadowdiff.proxy.shadowcalls``): each
        # child's end of that channel is handed to ``on_spawn`` as it starts
        self.calls = calls
        self.on_spawn = on_spawn
        self.restarts = 0       # children started after the first
        self._started = 0
        self._starts: list[float] = []   # when the children of the last RESTART_WINDOW started
        self._child: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._socket: socket.socket | None = None   # the connection's, to end what is sent to the child
        self._spawned = 0.0      # when the child was started
        self._ready = False
        self._closed = False
        self._lock = threading.Lock()   # (close() from the event loop's thread, at shutdown)
        self.incomplete = False         # the last child's writer left pairs or counts unwritten (``close``)

    def start(self) -> None:
        """Start the child now (the proxy's start-up), without waiting for it to be ready."""
        with contextlib.suppress(PairProcessUnavailable):
            self._connection(wait=False)

    def lost(self, wait: float = 1.0) -> None:
        """The child's channel for the shadow's calls closed: it is ending, or has ended.
        Start another once it has (within ``wait`` seconds: its socket closes a moment before
        it can be reaped); one still alive then goes on making the pairs."""
        with self._lock:
            child = self._child
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(wait)
        self.start()

    def hung(self) -> None:
        """The child has not answered a shadow's call long after it was due: killed (only
        signalled here: its socket is closed, and another started, by ``lost`` as for any
        child that died)."""
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            child.kill()

    def make(self, pairs: list[PairInputs]) -> list[Made | PairFailed]:
        """The pairs made, in order, handed over in batches of at most ``BATCH_BYTES``;
        ``PairProcessUnavailable`` (nothing made) when no child is ready."""
        batches: list[list[PairInputs]] = [[]]
        held = 0
        for inputs in pairs:
            if batches[-1] and held + inputs.size > BATCH_BYTES:
                batches.append([])
                held = 0
            batches[-1].append(inputs)
            held += inputs.size
        made = self._batch(batches[0], wait=False)
        for batch in batches[1:]:
            try:   # (a child starting again is waited for now: the thread makes the rest only if none can)
                made += self._batch(batch, wait=True)
            except PairProcessUnavailable:
                made += [_MAKE_HERE] * len(batch)
        return made

    def _batch(self, batch: list[PairInputs], wait: bool) -> list[Made | PairFailed]:
        """The batch's pairs, in order. A child that fails over a batch is replaced, and
        the batch tried again pair by pair in the new one."""
        try:
            return self._exchange(batch, wait)
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
                # (waited for: a pair that may have killed a process is never made in the proxy's)
                made += self._exchange([inputs], wait=True)
            except PairProcessError as exc:
                log.error("a pair could not be made: the pair process failed over it (%s %s): %s",
                          inputs.path, inputs.key, exc)
                made.append(PairFailed(f"the pair process failed over this pair: {exc}"))
        return made

    def _exchange(self, batch: list[PairInputs], wait: bool) -> list[Made | PairFailed]:
        # each pair pickled on its own: one that does not pickle is the thread's, not the batch's failure
        handed: list[bytes | None] = []
        for inputs in batch:
            try:
                handed.append(pickle.dumps(inputs, pickle.HIGHEST_PROTOCOL))
            except (RecursionError, pickle.PicklingError, TypeError, AttributeError, ValueError):
                handed.append(None)
        sent = [data for data in handed if data is not None]
        got: list[bytes | None] = []
        if sent:
            conn = self._connection(wait)
            try:
                conn.send_bytes(pickle.dumps(sent, pickle.HIGHEST_PROTOCOL))
                if not conn.poll(BATCH_TIMEOUT):
                    raise TimeoutError(f"no answer within {BATCH_TIMEOUT:g} s")
                got = pickle.loads(conn.recv_bytes())
            except (OSError, EOFError, TimeoutError, pickle.UnpicklingError) as exc:
                code = self._stop(kill=True, conn=conn)
                why = failure_text(exc) if code is None else f"it exited with status {code}"
                raise PairProcessError(why) from exc
        answers = iter(got)
        return [_MAKE_HERE if data is None else _loaded(next(answers, None)) for data in handed]

    def _connection(self, wait: bool) -> Connection:
        """The ready child's connection; a new child started if there is none. Without
        ``wait``, ``Starting`` while it is not ready yet."""
        with self._lock:
            if self._closed:
                raise PairProcessUnavailable("the proxy is stopping")
            if self._child is None or self._child.poll() is not None:
                self._spawn()
            conn = self._conn
            assert conn is not None
            if self._ready:
                return conn
            left = START_TIMEOUT - (time.monotonic() - self._spawned)
        try:
            if not conn.poll(max(0.0, left) if wait else 0.0):
                if wait or left <= 0:
                    raise TimeoutError(f"not ready within {START_TIMEOUT:g} s")
                raise Starting("the pair process is starting")
            if conn.recv() != _READY:
                raise EOFError("it said something else than that it was ready")
        except (OSError, EOFError, TimeoutError) as exc:
            code = self._stop(kill=True, conn=conn)
            why = failure_text(exc) if code is None else f"it exited with status {code}"
            raise PairProcessUnavailable(f"it did not start ({why})") from exc
        self._ready = True
        return conn

    def _spawn(self) -> None:
        """(holding the lock) Start a child, within the budget of starts."""
        self._stop_locked(kill=True)
        now = time.monotonic()
        self._starts = [at for at in self._starts if now - at < RESTART_WINDOW]
        if len(self._starts) >= MAX_STARTS:
            raise PairProcessUnavailable(f"{MAX_STARTS} were started within {RESTART_WINDOW:g} s; the proxy's "
                                         "thread makes the pairs until fewer were")
        self._starts.append(now)
        ours, theirs = socket.socketpair()
        calls = socket.socketpair() if self.calls is not None else None
        given = [theirs] + ([calls[1]] if calls is not None else [])
        try:
            # the proxy's own module path, and not the working directory before it (-P): the child
            # imports the code the proxy runs, however the proxy was started and from wherever
            path = os.pathsep.join(p for p in sys.path if p)
            # (and no metrics directory: what the child counts, the proxy counts from what it is told)
            env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
            self._child = subprocess.Popen(
                [sys.executable, "-P", "-m", "shadowdiff.proxy.pairprocess", *(str(end.fileno()) for end in given)],
                pass_fds=tuple(end.fileno() for end in given), stdin=subprocess.DEVNULL,
                env={**env, "PYTHONPATH": path})
        except OSError as exc:
            ours.close()
            if calls is not None:
                calls[0].close()
            raise PairProcessUnavailable(f"cannot start it: {failure_text(exc)}") from exc
        finally:
            for end in given:
                end.close()
        self._socket, self._conn = ours, Connection(os.dup(ours.fileno()))
        self._spawned, self._ready = now, False
        if self._started:
            self.restarts += 1
            if self.on_restart is not None:
                self.on_restart()
        self._started += 1
        with contextlib.suppress(OSError):   # (it died already: found when it is asked to be ready)
            self._conn.send(self.settings)   # (a few KB: the socket's buffer takes them)
            if self.calls is not None:
                self._conn.send(self.calls)
        if calls is not None:
            if self.on_spawn is not None:
                self.on_spawn(calls[0])
            else:
                calls[0].close()

    def _stop(self, kill: bool, conn: Connection | None = None) -> int | None:
        """Close the child's socket (it then ends), killing it first with ``kill``; its exit
        status, if it had one. With ``conn``, only the child of that connection: one that
        failed over it may have been replaced meanwhile (``lost``), and its successor stays."""
        with self._lock:
            if conn is not None and conn is not self._conn:
                return None
            return self._stop_locked(kill)

    def _stop_locked(self, kill: bool) -> int | None:
        child, conn, sock = self._child, self._conn, self._socket
        self._child, self._conn, self._socket, self._ready = None, None, None, False
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
        """End the child once it has made what it was given and its writer has written
        what it holds, within ``timeout`` seconds (0: at once, what it was making is for no
        one now); no other starts after it. ``incomplete`` then says whether the child
        left pairs or counts unwritten (its exit status, or its being killed, says so)."""
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
        code = self._stop(kill=True)
        self.incomplete = self.calls is not None and code != 0


_MAKE_HERE = MakeHere("the pair does not pickle: made in the proxy's thread")


def _loaded(data: bytes | None) -> Made | PairFailed:
    """A pair as the child gave it back (``None``: it gave nothing for it)."""
    if data is None:
        return PairFailed("the pair process gave nothing back for this pair")
    try:
        made: Made | PairFailed = pickle.loads(data)
    except Exception:    # (a bug: the child pickled it)
        return _MAKE_HERE
    return made


def _serve(conn: Connection, calls: int | None) -> None:
    maker = Maker(conn.recv())
    serving = None
    if calls is not None:
        from shadowdiff.proxy.shadowcalls import serve_in_thread

        # (the thread calling the shadow waits for this one's lock no longer than the proxy's threads do)
        sys.setswitchinterval(SWITCH_INTERVAL)
        serving = serve_in_thread(calls, conn.recv())
    # Making pairs, the child yields to the proxy's event loop: on a core they share, a client's
    # request never waits for it. Not the thread calling the shadow: it times the shadow's
    # answers, and a starved one - on a busy machine, at nice 10 - timed them late and failed
    # its connections (connect_error, counted against the shadow). Nor this thread, which ends
    # the process: at nice 10 on a busy machine its exit alone took 10 s of the proxy's shutdown.
    failed: list[BaseException] = []
    making = threading.Thread(target=_make_pairs, args=(conn, maker, failed), name="shadowdiff-making", daemon=True)
    making.start()
    making.join()
    # (the pairs the child stored itself are written before it ends; the proxy closed their channel first)
    complete = serving is None or serving.join()
    logging.shutdown()
    sys.stderr.flush()
    # (what is left is the interpreter's own teardown, which no one waits for: the proxy does)
    os._exit(1 if failed else 0 if complete else INCOMPLETE)


def _make_pairs(conn: Connection, maker: Maker, failed: list[BaseException]) -> None:
    """The pairs the proxy hands over, made and handed back, until it closes the connection
    (a bug that ends this thread is put in ``failed``, and said, and the process exits 1)."""
    yield_to_the_proxy()
    try:
        conn.send(_READY)
        while True:
            try:
                data = conn.recv_bytes()
            except EOFError:
                break
            handed: list[bytes] = pickle.loads(data)
            del data
            conn.send_bytes(pickle.dumps([_made(maker, one) for one in handed], pickle.HIGHEST_PROTOCOL))
    except (BrokenPipeError, ConnectionResetError):   # the proxy went away
        pass
    except BaseException as exc:
        failed.append(exc)
        raise


def _made(maker: Maker, data: bytes) -> bytes:
    """One pair, made and pickled; what does not pickle back is the thread's to make."""
    try:
        made: Made | PairFailed = maker.make(pickle.loads(data))
    except Exception as exc:   # one pair's failure is that pair's: the proxy counts and logs it
        made = PairFailed(failure_text(exc))
    try:
        return pickle.dumps(made, pickle.HIGHEST_PROTOCOL)
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError, ValueError):
        return pickle.dumps(_MAKE_HERE, pickle.HIGHEST_PROTOCOL)


def hurry() -> None:
    """Stop yielding: the proxy waits for this process to end. Every thread gets this one's
    nice value back (the calling thread's: the proxy's), where the system lets a process lower
    its own (root, CAP_SYS_NICE or RLIMIT_NICE); elsewhere what it holds is written at nice 10,
    within the budget the proxy gave it."""
    with contextlib.suppress(OSError):
        nice = os.getpriority(os.PRIO_PROCESS, 0)
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, int(task), nice)


def yield_to_the_proxy() -> None:
    """Give the calling thread (Linux: a thread's own nice value) and the threads it starts
    the ``NICE`` value, unless it has a higher one."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, max(NICE, os.getpriority(os.PRIO_PROCESS, 0)))


def _die_with_the_proxy() -> None:
    """Linux: be killed when the process that started this one ends (however it ends)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def main() -> None:
    proxy = os.getppid()
    # (the proxy drains its pairs, then closes the socket: Ctrl-C and a service manager's
    # SIGTERM to the process group must not end this one before)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_the_proxy()
    if os.getppid() != proxy:     # (it ended before the line above took effect)
        return
    conn = Connection(int(sys.argv[1]))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):   # the proxy went away
        _serve(conn, int(sys.argv[2]) if len(sys.argv) > 2 else None)


if __name__ == "__main__":
    main()
