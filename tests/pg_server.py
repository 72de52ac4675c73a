"""A throwaway PostgreSQL cluster for the tests: Debian's server binaries (installed by `make
postgres`), `initdb` into a fresh temporary directory, `postgres` listening on 127.0.0.1 only (a
free port; its unix socket inside that directory), stopped (`pg_ctl stop -m fast`) and removed at
the end, even on failure.

PostgreSQL refuses to run as root: as root, the cluster runs as the unprivileged `postgres` system
user (created by the Debian package), which owns the directory; otherwise as the current user. The
superuser is `SUPERUSER` with trust authentication, which is safe only because nothing but this
machine's loopback can reach it, and only for tests."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

SUPERUSER = "memory"
DATABASE = "memory"
RUN_AS = "postgres"  # the system user the cluster runs as when the tests run as root
_TIMEOUT = 60  # seconds for initdb, start or stop
# Test settings: durability is not wanted in a cluster that is thrown away (fsync off and friends),
# and a small footprint on a shared machine. `durable=True` (benchmarks) keeps PostgreSQL's own
# defaults for the first three instead: fsync at every commit.
_NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "shared_buffers": "'32MB'",
    "max_connections": "50",
    "log_min_messages": "warning",
}


class PostgresMissing(RuntimeError):
    """The server binaries are not installed (`make postgres` installs them)."""


def find_bindir() -> Path | None:
    """The directory of initdb, pg_ctl and postgres: `pg_config --bindir`, else the newest
    /usr/lib/postgresql/*/bin (Debian keeps them off PATH)."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            candidates.append(Path(out.stdout.strip()))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0), reverse=True)
    candidates += [Path(p) for p in versions]
    for bindir in candidates:
        if all(os.access(bindir / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PgServer:
    """One running cluster; `url()` for a database in it, `stop()` to end and remove it."""

    bindir: Path
    root: Path
    port: int
    run_as: list[str]
    durable: bool = False  # fsync at every commit (PostgreSQL's defaults) rather than _NOT_DURABLE
    start_seconds: float = 0.0
    stop_seconds: float = 0.0
    stopped: bool = field(default=False)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def pid(self) -> int:
        """The postmaster's process id (first line of postmaster.pid)."""
        return int((self.data / "postmaster.pid").read_text().splitlines()[0])

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [*self.run_as, *argv], cwd=self.root, capture_output=True, text=True, timeout=_TIMEOUT, check=False
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{Path(argv[0]).name} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def _start(self) -> None:
        began = time.perf_counter()
        self._run(
            str(self.bindir / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            SUPERUSER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            # C.UTF-8, not C: under the C locale pg_trgm finds no word characters in Chinese text.
            "--locale",
            "C.UTF-8",
            "--no-instructions",
        )
        settings = {
            **_SETTINGS,
            **({} if self.durable else _NOT_DURABLE),
            "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
        }
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# tests/pg_server.py\n" + "".join(f"{k} = {v}\n" for k, v in settings.items()))
        pg_ctl = str(self.bindir / "pg_ctl")
        self._run(pg_ctl, "start", "--pgdata", str(self.data), "--log", str(self.root / "server.log"), "--wait")
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        self.start_seconds = time.perf_counter() - began

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (`pg_ctl restart`): `fast` ends every connection (open transactions
        roll back), `immediate` kills every server process at once, as a crash would, and the
        start recovers from the log."""
        pg_ctl = str(self.bindir / "pg_ctl")
        self._run(pg_ctl, "restart", "--pgdata", str(self.data), "--mode", mode, "--log",
                  str(self.root / "server.log"), "--wait")  # fmt: skip

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory; safe to call twice."""
        if self.stopped:
            return
        began = time.perf_counter()
        try:
            if (self.data / "postmaster.pid").exists():
                pg_ctl = str(self.bindir / "pg_ctl")
                self._run(pg_ctl, "stop", "--pgdata", str(self.data), "--mode", "fast", "--wait")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.stopped = True
            self.stop_seconds = time.perf_counter() - began

    def create(self, name: str, template: str = "template0") -> None:
        """CREATE DATABASE `name` as a copy of `template` (which nobody may be connected to)."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
            )

    @contextlib.contextmanager
    def database(self, template: str = "template0") -> Iterator[str]:
        """A new database for one test, a copy of `template` (by default empty); its URL.
        Dropped afterwards, with any connection still open to it (WITH (FORCE))."""
        name = f"test_{uuid.uuid4().hex[:12]}"
        self.create(name, template)
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _prepare(bindir: Path, durable: bool) -> PgServer:
    """A fresh directory (owned by the `postgres` user when running as root) and a free port."""
    run_as: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-pg-"))
    try:
        (root / "socket").mkdir()
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(RUN_AS)
            except KeyError:
                raise PostgresMissing(f"running as root needs the `{RUN_AS}` system user (Debian's package)") from None
            for path in (root, root / "socket"):
                os.chown(path, account.pw_uid, account.pw_gid)
            run_as = ["runuser", "-u", RUN_AS, "--"]
        return PgServer(bindir=bindir, root=root, port=_free_port(), run_as=run_as, durable=durable)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def start(attempts: int = 3, *, durable: bool = False) -> PgServer:
    """Start a fresh cluster; raises PostgresMissing without the binaries. The caller stops it.
    `durable`: fsync at every commit, as a real deployment would (the tests do without).
    Another attempt, on another port, if the first fails (the free port can be taken meanwhile)."""
    bindir = find_bindir()
    if bindir is None:
        raise PostgresMissing("PostgreSQL server binaries not found (pg_config --bindir, /usr/lib/postgresql/*/bin)")
    for attempt in range(attempts):
        server = _prepare(bindir, durable)
        try:
            server._start()
        except RuntimeError:
            server.stop()
            if attempt == attempts - 1:
                raise
        except BaseException:
            server.stop()
            raise
        else:
            return server
    raise AssertionError("unreachable")


@contextlib.contextmanager
def running(*, durable: bool = False) -> Iterator[PgServer]:
    """A cluster for the length of a `with` block, stopped and removed however the block ends."""
    server = start(durable=durable)
    try:
        yield server
    finally:
        server.stop()
