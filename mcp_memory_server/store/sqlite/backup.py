"""A consistent copy of the memory database while servers keep writing to it.

Copying the file with `cp` while a server runs can catch it half-written, and in WAL mode the
newest commits are not in `memory.db` at all but in `memory.db-wal`. SQLite's online backup API
copies the database as one read transaction sees it: every commit made before the copy began,
none of those made during it, whatever other processes do meanwhile (in WAL mode they go on
writing; they are not blocked).

The copy is written to a temporary file in the target's directory, checked, and only then renamed
over the target, so a failed or interrupted backup never leaves a half-written file under the
target's name. The source is opened without migrating it: a backup of an old database stays in
its old schema, and the store upgrades it when it opens it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import aiosqlite
import anyio
import anyio.to_thread

from ...errors import InvalidInput, NotFound, StoreError
from ..rows import scalar, scalars

__all__ = ["BackupReport", "backup"]


@dataclass(frozen=True, slots=True)
class BackupReport:
    path: Path  # the backup written
    memories: int  # live memories in it, every namespace
    bytes: int


def _check_paths(source: Path, target: Path, force: bool) -> None:
    if not source.is_file():
        raise NotFound(
            f"there is no memory database at {source}; check --db or MCP_MEMORY_DB "
            "(the server creates the database when it first starts)"
        )
    if target.is_dir():
        raise InvalidInput(f"{target} is a directory; give the backup's file name, such as {target / 'memory.db'}")
    if not target.parent.is_dir():
        raise NotFound(f"cannot write {target}: the directory {target.parent} does not exist")
    companions = {source, source.with_name(source.name + "-wal"), source.with_name(source.name + "-shm")}
    if target in companions or (target.exists() and any(target.samefile(p) for p in companions if p.exists())):
        raise InvalidInput(f"{target} is the database being backed up (or one of its files); choose another path")
    if target.exists() and not force:
        raise InvalidInput(f"{target} already exists; nothing was written (use --force to replace it)")


async def backup(source: Path, target: Path, *, force: bool = False, busy_timeout_ms: int = 5000) -> BackupReport:
    """Copy the database at `source` to `target` through SQLite's online backup API. Raises
    NotFound (no source, no target directory), InvalidInput (target exists without `force`, is a
    directory or is the source) or StoreError (the source is not a memory database, or the copy
    failed); in every case nothing is left at `target` that was not there before."""
    source, target, partial = await anyio.to_thread.run_sync(_prepare, source, target, force)
    try:
        memories = await _copy(source, partial, busy_timeout_ms / 1000)
        size = await anyio.to_thread.run_sync(_publish, partial, target)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: partial.unlink(missing_ok=True))
        raise
    return BackupReport(target, memories, size)


def _prepare(source: Path, target: Path, force: bool) -> tuple[Path, Path, Path]:
    """The paths made absolute and checked, and the empty temporary file the copy goes to,
    beside the target."""
    source, target = source.absolute(), target.absolute()
    _check_paths(source, target, force)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    os.close(fd)
    return source, target, Path(name)


def _publish(partial: Path, target: Path) -> int:
    """The finished copy on disk, then under the target's name; returns its size."""
    with partial.open("rb+") as written:
        os.fsync(written.fileno())
    os.replace(partial, target)
    _sync_directory(target.parent)
    return target.stat().st_size


async def _copy(source: Path, partial: Path, busy_timeout: float) -> int:
    """The backup itself; returns the number of memories copied."""
    # mode=rw: never create a database where the source should be (the URI form needs the
    # path quoted: '?' and '#' are legal in file names).
    uri = f"file:{quote(source.as_posix())}?mode=rw"
    try:
        async with aiosqlite.connect(uri, uri=True, timeout=busy_timeout) as src:
            tables = await scalar(
                src,
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('memories', 'schema_migrations')",
            )
            if tables != 2:
                raise StoreError(f"{source} is not a memory database (it has no memories table); nothing was written")
            async with aiosqlite.connect(partial) as dst:
                # pages=0: every page in one step, inside one read transaction, so the copy is
                # one consistent state even while other processes commit.
                await src.backup(dst, pages=0)
                # The copy would say WAL like its source; a plain journal makes it one
                # self-contained file (the store turns WAL on again when it opens it).
                await dst.execute("PRAGMA journal_mode = DELETE")
                check = await scalars(dst, "PRAGMA integrity_check")
                if check != ["ok"]:
                    problem = "; ".join(" ".join(str(line).split()) for line in check)[:500]
                    raise StoreError(f"the copy failed SQLite's integrity check ({problem}); it was removed")
                return int(await scalar(dst, "SELECT count(*) FROM memories"))
    except aiosqlite.Error as exc:
        raise StoreError(f"the backup of {source} failed and nothing was written: {exc}") from exc


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); where directories cannot be opened, skip it."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
