"""What one import may cost, and the reading that keeps to it: a zip or gzip file unpacked a MiB
at a time up to a cap, the JSON values and the items a file may hold, its lines read one at a
time. Every limit follows MCP_MEMORY_MAX_BODY (config/settings.py says how and why), so one setting raises
them all, and every refusal is a TooLarge (HTTP 413) of one line naming the limit and the setting.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator

from ..config.config import Config
from ..config.limits import BODY_BYTES_PER_ITEM, UNPACK_RATIO
from ..errors import InvalidInput, TooLarge

__all__ = ["check_items", "check_json_size", "decode", "lines", "too_large"]

_UNPACK_CHUNK = 1 << 20  # bytes unpacked at a time
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines breaks
_LINE = re.compile(f"([^{_BREAKS}]*)(\r\n|[{_BREAKS}]|\\Z)")


def decode(packed: bytes, config: Config, name: str = "the file") -> str:
    """The text of a file: a zip (OpenMemory's export: its memories.json) or gzip unpacked first,
    a MiB at a time and never past `config.limits.max_unpacked_bytes` (TooLarge): a bomb stops there,
    having cost no more memory than the limit."""
    limit = config.limits.max_unpacked_bytes
    data: bytes | bytearray = packed
    try:
        if data.startswith(b"PK\x03\x04"):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = {m.filename.rsplit("/", 1)[-1]: m for m in archive.infolist() if not m.is_dir()}
                member = members.get("memories.json") or members.get("memories.jsonl.gz")
                if member is None:
                    raise InvalidInput(f"{name} is a zip without memories.json (OpenMemory's export holds one).")
                if member.file_size > limit:  # what the zip declares: refused before anything is unpacked
                    raise _unpacks_over(config, f"{name}: {member.filename}")
                with archive.open(member) as unpacked:  # the declared size may lie: counted as it comes
                    data = _read_at_most(unpacked.read, limit, config, f"{name}: {member.filename}")
        if data.startswith(b"\x1f\x8b"):
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
                data = _read_at_most(unpacked.read, limit, config, name)
        return data.decode("utf-8-sig")  # a BOM, as some Windows editors write, is not text
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise InvalidInput(f"{name} is a damaged archive: {exc}.") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} is not UTF-8 text (byte {exc.start:,} cannot be read).") from None


def _read_at_most(read: Callable[[int], bytes], limit: int, config: Config, name: str) -> bytearray:
    """All that `read` gives, a MiB at a time; TooLarge once it gives more than `limit` bytes
    (the one byte over is all that is read past the limit). Not copied into bytes: that would
    hold the text twice."""
    out = bytearray()
    while chunk := read(min(_UNPACK_CHUNK, limit + 1 - len(out))):
        out += chunk
        if len(out) > limit:
            raise _unpacks_over(config, name)
    return out


def _unpacks_over(config: Config, name: str) -> TooLarge:
    return too_large(
        config, f"{name} unpacks to over {config.limits.max_unpacked_bytes:,} bytes", f"{UNPACK_RATIO} times"
    )


def too_large(config: Config, what: str, rule: str) -> TooLarge:
    """The one message of every import limit: what was over which limit, and the setting that
    raises it (each limit follows MCP_MEMORY_MAX_BODY, see settings.UNPACK_RATIO)."""
    return TooLarge(
        f"{what}, the most one import takes ({rule} MCP_MEMORY_MAX_BODY, now {config.limits.max_body_bytes:,} bytes);"
        " nothing was imported. Raise MCP_MEMORY_MAX_BODY to import it whole."
    )


def check_json_size(text: str, config: Config) -> None:
    """TooLarge when the text may hold more JSON values than an import reads. Counted before
    parsing, at the speed of str.count: every value but the outermost follows a comma, a colon or
    an opening bracket, and every key a comma or a brace, so their number bounds what the parser
    would build (those inside strings are counted too: a bound from above)."""
    limit = config.limits.max_import_values
    if len(text) > limit and sum(text.count(mark) for mark in ",:[{") > limit:
        raise too_large(
            config,
            f"the file holds over {limit:,} JSON values (commas, colons and brackets counted)",
            "one per byte of",
        )


def lines(text: str) -> Iterator[str]:
    """The lines of `text` as str.splitlines gives them, one at a time: a file of many short
    lines, all held at once, would take 20 times its size."""
    return (m[1] for m in _LINE.finditer(text) if m[0])  # the empty match at the end is no line


def check_items(count: int, config: Config) -> None:
    """TooLarge when a file holds more items than one import takes."""
    if count > config.limits.max_import_items:
        raise too_large(
            config,
            f"the file holds over {config.limits.max_import_items:,} items",
            f"one per {BODY_BYTES_PER_ITEM} bytes of",
        )
