"""A PostgreSQL server of one's own, to stop and start under a proxy (the store-fault
tests and bench/store_faults.py). The machine's shared server is never touched.

``initdb`` and ``pg_ctl`` make a cluster in a temporary directory, listening on a free
loopback port. PostgreSQL refuses to run as root, so under root they run as the
``postgres`` user (``runuser``), which must be able to write the directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.servers import free_port


class Unavailable(RuntimeError):
    """No PostgreSQL server can be made here (no initdb, or no user to run it as)."""


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)),
                                       None)
    if found is None:
        raise Unavailable(f"{name} not found (install the PostgreSQL server)")
    return found


class Cluster:
    """A running throwaway server: ``url``, ``stop(mode)``, ``start()``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self._pg_ctl = _binary("pg_ctl")

    def _run(self, *args: str) -> None:
        result = subprocess.run([*self._as_user, *args], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise Unavailable(f"{' '.join(args[:2])}: {result.stderr.strip() or result.stdout.strip()}")

    def init(self) -> None:
        # trust on loopback, no fsync: a test's data need not outlive a power cut
        self._run(_binary("initdb"), "-D", str(self.directory / "data"), "-A", "trust", "-U", "postgres",
                  "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(self._pg_ctl, "-D", str(self.directory / "data"), "-l", str(self.directory / "server.log"),
                  "-w", "-t", "60", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        """``immediate``: the server dies as in a crash; ``fast``: it ends every session and stops."""
        self._run(self._pg_ctl, "-D", str(self.directory / "data"), "-m", mode, "-w", "-t", "60", "stop")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[Cluster]:
    """A new PostgreSQL server, started; stopped and deleted afterwards. ``Unavailable``
    when none can be made here."""
    directory = Path(tempfile.mkdtemp(prefix="shadowdiff-pg-"))
    try:
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                raise Unavailable("running as root without runuser: no user to run PostgreSQL as")
            try:
                shutil.chown(directory, "postgres")
            except LookupError as exc:
                raise Unavailable("running as root without a postgres user to run PostgreSQL as") from exc
        cluster = Cluster(directory)
        cluster.init()
        cluster.start()
        try:
            yield cluster
        finally:
            with contextlib.suppress(Unavailable, subprocess.TimeoutExpired):
                cluster.stop("immediate")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
