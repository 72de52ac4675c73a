"""jieba, loaded once per process in a background thread so start-up never waits for it.

jieba keeps its prefix dictionary (every word and every prefix of a word, 500,000 entries) as a
dict of Python strings: 66 MB resident. We keep the same entries in a compact form instead (about
13 MB): single characters and long or unusual words in small dicts, and words of 2-4 characters,
packed 16 bits per character into one integer, in open-addressing hash tables of machine
integers. jieba's two dictionary-bound steps (the DAG of possible words and the best route
through it) run against it; the words it finds, and so the segmentation, are the same.

The tables are cached on disk as raw bytes and read straight into place: loading takes a few
milliseconds in the background thread, so the server stays responsive while the segmenter loads.
Without a cache they are built from jieba's dictionary file (about a second), never holding
jieba's own dict, in a child process when there is a cache folder to hand it over in: a second of
pure Python in a thread would hold the interpreter lock that the server's first requests need.
"""

from __future__ import annotations

import functools
import io
import logging
import marshal
import os
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from math import log
from pathlib import Path
from typing import Any, Literal

__all__ = ["Segmenter", "SegmenterState"]

SegmenterState = Literal["loading", "ready", "failed"]

log_ = logging.getLogger(__name__)

_CACHE_FORMAT = 2
_MAGIC = b"mcp-memory-server jieba\n"
_PACKED = (2, 3, 4)  # word lengths kept in the hash tables
_KEY_TYPES: dict[int, Literal["I", "Q"]] = {2: "I", 3: "Q", 4: "Q"}  # 16 bits per character


class Dictionary:
    """jieba's prefix dictionary (word or prefix of a word -> frequency, 0 for a prefix only),
    read-only. Only `get` and `in` are used by jieba's precise mode."""

    def __init__(self, total: int, single: dict[str, int], rest: dict[str, int], tables: dict[int, Any]) -> None:
        self.total = total
        self.single = single  # one character
        self.rest = rest  # longer than 4, or a character beyond 16 bits
        self.tables = tables  # length -> (keys, frequencies, size); key 0 marks an empty slot

    @classmethod
    def parse(cls, data: bytes) -> Dictionary:
        """jieba's Tokenizer.gen_pfdict on a dictionary file's bytes (each word with its frequency,
        every other prefix of a word with 0), straight into the compact form: the dict jieba
        builds peaks at 90 MB."""
        single: dict[str, int] = {}
        rest: dict[str, int] = {}
        # Room for a prefix of every length in each line, the tables fitted to size at the end.
        lines = data.count(b"\n") + 1
        tables = {n: _empty_table(n, lines * 2 // 3) for n in _PACKED}
        used = dict.fromkeys(_PACKED, 0)
        total = 0
        for number, raw in enumerate(io.BytesIO(data), 1):
            line = raw.strip().decode("utf-8")
            word, count_text = line.split(" ")[:2]
            count = int(count_text)
            if not -(1 << 31) <= count < 1 << 31:
                raise ValueError(f"frequency out of range at line {number}: {line}")
            total += count
            key = 0
            for end in range(1, len(word) + 1):  # the prefixes, then the word itself
                value = count if end == len(word) else 0
                code = ord(word[end - 1])
                key = key << 16 | code if key >= 0 and 0 < code < 0x10000 else -1
                if end == 1:
                    if end == len(word) or word[0] not in single:
                        single[word[0]] = value
                elif key < 0 or end not in tables:
                    if end == len(word) or word[:end] not in rest:
                        rest[word[:end]] = value
                else:
                    keys, counts, size = tables[end]
                    slot = _slot(keys, key, size)
                    if not keys[slot]:
                        keys[slot] = key
                        used[end] += 1
                    elif end < len(word):
                        continue  # a prefix already there keeps its frequency
                    counts[slot] = value
        fitted = {}
        for n, (keys, counts, size) in tables.items():
            new = _empty_table(n, used[n])
            for slot in range(size):
                if keys[slot]:
                    found = _slot(new[0], keys[slot], new[2])
                    new[0][found], new[1][found] = keys[slot], counts[slot]
            fitted[n] = (memoryview(new[0]), memoryview(new[1]), new[2])
        return cls(total, single, rest, fitted)

    def get(self, word: str, default: int | None = None) -> int | None:
        n = len(word)
        if n == 1:
            return self.single.get(word, default)
        key = _pack(word) if n in self.tables else 0
        if not key:
            return self.rest.get(word, default)
        keys, counts, size = self.tables[n]
        slot = key % size
        while True:
            found = keys[slot]
            if found == key:
                return int(counts[slot])
            if not found:
                return default
            slot = slot + 1 if slot + 1 < size else 0

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self.get(word)
        if found is None:
            raise KeyError(word)
        return found

    def write(self, path: Path) -> None:
        """Header (marshal), then each table's keys and frequencies as raw bytes."""
        layout = [(n, size, keys.nbytes, counts.nbytes) for n, (keys, counts, size) in self.tables.items()]
        header = marshal.dumps((_CACHE_FORMAT, self.total, self.single, self.rest, layout))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".jieba-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(_MAGIC + len(header).to_bytes(8, "little") + header)
            for keys, counts, _ in self.tables.values():
                handle.write(keys)
                handle.write(counts)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> Dictionary:
        with path.open("rb") as handle:
            left = os.fstat(handle.fileno()).st_size
            if handle.read(len(_MAGIC)) != _MAGIC:
                raise ValueError("not a segmenter cache")
            header_bytes = int.from_bytes(handle.read(8), "little")
            if header_bytes > left:
                raise ValueError("truncated")
            version, total, single, rest, layout = marshal.loads(handle.read(header_bytes))
            if version != _CACHE_FORMAT:
                raise ValueError(f"cache format {version}")
            tables = {}
            for n, size, key_bytes, count_bytes in layout:
                if key_bytes + count_bytes > left:
                    raise ValueError("truncated")
                keys, counts = bytearray(key_bytes), bytearray(count_bytes)
                if handle.readinto(keys) != key_bytes or handle.readinto(counts) != count_bytes:
                    raise ValueError("truncated")
                tables[n] = (memoryview(keys).cast(_KEY_TYPES[n]), memoryview(counts).cast("i"), size)
                if len(tables[n][0]) != size or len(tables[n][1]) != size:
                    raise ValueError("inconsistent table")
        if set(tables) != set(_PACKED) or not isinstance(single, dict) or not isinstance(rest, dict):
            raise ValueError("incomplete")
        return cls(int(total), single, rest, tables)


def _pack(word: str) -> int:
    """The word's characters, 16 bits each; 0 when one of them does not fit (or is NUL)."""
    key = 0
    for char in word:
        code = ord(char)
        if not 0 < code < 0x10000:
            return 0
        key = key << 16 | code
    return key


def _empty_table(n: int, entries: int) -> tuple[array[int], array[int], int]:
    size = _table_size(entries)
    keys = array(_KEY_TYPES[n])
    keys.frombytes(bytes(keys.itemsize * size))
    return keys, array("i", bytes(4 * size)), size


def _slot(keys: Any, key: int, size: int) -> int:
    """Where `key` is, or the empty slot where it would go."""
    slot = key % size
    while keys[slot] and keys[slot] != key:
        slot = slot + 1 if slot + 1 < size else 0
    return slot


def _table_size(entries: int) -> int:
    """About twice the entries (short probe chains), with no small factor (keys are not random)."""
    size = max(entries * 2, 16) | 1
    while any(size % p == 0 for p in (3, 5, 7, 11, 13, 17, 19, 23)):
        size += 2
    return size


def _dag(dictionary: Dictionary, sentence: str) -> _Dag:
    """jieba's Tokenizer.get_DAG: per position, the ends of the words starting there (itself if
    none), with each word's log probability kept for `_route`."""
    if "\0" in sentence or (sentence and max(sentence) > "\uffff"):
        return _dag_any(dictionary, sentence)
    single, rest, tables = dictionary.single, dictionary.rest, dictionary.tables
    logtotal = log(dictionary.total)
    unknown = [log(1) - logtotal]  # shared: nothing changes these lists
    count = len(sentence)
    dag = _Dag()
    dag.scores = all_scores = {}
    for k, char in enumerate(sentence):
        found = single.get(char)
        if found is None:
            dag[k] = [k]
            all_scores[k] = unknown
            continue
        ends: list[int] = []
        scores: list[float] = []
        key = ord(char)
        i = k + 1
        while found is not None:
            if found:
                ends.append(i - 1)
                scores.append(log(found) - logtotal)
            if i >= count:
                break
            n = i - k + 1
            if n <= 4:  # every character fits in 16 bits (checked above)
                key = key << 16 | ord(sentence[i])
                keys, counts, size = tables[n]
                slot = key % size
                while True:
                    probe = keys[slot]
                    if probe == key:
                        found = counts[slot]
                        break
                    if not probe:
                        found = None
                        break
                    slot = slot + 1 if slot + 1 < size else 0
            else:
                found = rest.get(sentence[k : i + 1])
            i += 1
        dag[k] = ends or [k]
        all_scores[k] = scores or unknown
    return dag


def _dag_any(dictionary: Dictionary, sentence: str) -> _Dag:
    """`_dag` for any text (a character beyond 16 bits, or NUL), one `get` per fragment."""
    logtotal = log(dictionary.total)
    dag = _Dag()
    dag.scores = {}
    for k in range(len(sentence)):
        ends: list[int] = []
        scores: list[float] = []
        i = k
        found = dictionary.get(sentence[k])
        while found is not None:
            if found:
                ends.append(i)
                scores.append(log(found) - logtotal)
            i += 1
            if i >= len(sentence):
                break
            found = dictionary.get(sentence[k : i + 1])
        dag[k] = ends or [k]
        dag.scores[k] = scores or [log(1) - logtotal]
    return dag


class _Dag(dict[int, list[int]]):
    __slots__ = ("scores",)
    scores: dict[int, list[float]]


def _route(sentence: str, dag: _Dag, route: dict[int, tuple[float, int]]) -> None:
    """jieba's Tokenizer.calc: the most probable segmentation, from the end."""
    count = len(sentence)
    route[count] = (0, 0)
    scores = dag.scores
    for idx in range(count - 1, -1, -1):
        route[idx] = max((score + route[x + 1][0], x) for score, x in zip(scores[idx], dag[idx]))  # noqa: B905


def _import_jieba() -> Any:
    """jieba, imported without pkg_resources. jieba's `_compat` imports pkg_resources only to open
    files inside its own package, and opens them by path when the import fails; importing it
    walks every installed distribution (0.1-0.5 s, the bulk of importing jieba), all of it holding
    the interpreter lock that the server's requests need meanwhile. Nothing else in the server
    imports pkg_resources; where something has, it is used as it is."""
    if "pkg_resources" in sys.modules:
        import jieba

        return jieba
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # `import` now raises ImportError
    try:
        import jieba
    finally:
        if sys.modules.get("pkg_resources", False) is None:
            del sys.modules["pkg_resources"]
    return jieba


def build_cache(path: Path) -> None:
    """Build the compact dictionary from jieba's dictionary file and write it to `path`; what the
    child process of `Segmenter._build` runs."""
    tokenizer = _import_jieba().Tokenizer()
    with tokenizer.get_dict_file() as handle:
        Dictionary.parse(handle.read()).write(path)


# The child process: this module loaded from its file alone, since importing the package would
# cost it as long as the build itself. It writes nothing to stdout (the stdio server's protocol).
_CHILD = (
    "import importlib.util, sys\n"
    "from pathlib import Path\n"
    "spec = importlib.util.spec_from_file_location('segmenter_build', sys.argv[1])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "module.build_cache(Path(sys.argv[2]))\n"
)


def _build_in_child(path: Path) -> bool:
    """Whether a child process built the cache at `path`."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, __file__, str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log_.warning("could not build the segmenter cache in a child process (%s); building it here", exc)
        return False
    if done.returncode != 0:
        reason = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        log_.warning("building the segmenter cache in a child process failed (%s); building it here", reason)
        return False
    return True


class Segmenter:
    """Chinese/English word segmentation; thread-safe once loaded."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = cache_dir
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._tokenizer: Any = None  # a jieba.Tokenizer
        self._error: BaseException | None = None
        self._building = False  # no cache to read: the dictionary is being built (seconds)

    @property
    def ready(self) -> bool:
        """Loading has ended, loaded or failed (see `state`)."""
        return self._ready.is_set()

    @property
    def state(self) -> SegmenterState:
        if not self._ready.is_set():
            return "loading"
        return "failed" if self._error is not None else "ready"

    def start(self) -> None:
        """Begin loading in a daemon thread; calling it again does nothing."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="jieba-loader", daemon=True)
                self._thread.start()

    def wait_sync(self) -> None:
        self.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(f"the Chinese segmenter failed to load: {self._error}") from self._error

    async def wait(self) -> None:
        """Wait for the dictionary without blocking the event loop."""
        if not self._ready.is_set():
            import anyio.to_thread  # here: the child process that builds the cache needs no anyio

            self.start()
            await anyio.to_thread.run_sync(self._ready.wait)
        if self._error is not None:
            raise RuntimeError(f"the Chinese segmenter failed to load: {self._error}") from self._error

    async def wait_at_most(self, seconds: float) -> SegmenterState:
        """Wait up to `seconds` for loading to end, without blocking the event loop; the state then.
        No wait once the dictionary is known to be built from scratch rather than read from the
        cache: that takes seconds, a short wait would only delay the answer."""
        if not self._ready.is_set() and not self._building:
            import anyio.to_thread

            self.start()
            await anyio.to_thread.run_sync(self._wait_unless_building, seconds)
        return self.state

    def _wait_unless_building(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._building and (left := deadline - time.monotonic()) > 0:
            if self._ready.wait(min(left, 0.01)):
                return

    def cut(self, text: str) -> list[str]:
        """Precise-mode segmentation (queries)."""
        return list(self._loaded().cut(text, HMM=True))

    def _loaded(self) -> Any:
        if self._tokenizer is None:
            self.wait_sync()
        assert self._tokenizer is not None
        return self._tokenizer

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            jieba = _import_jieba()
            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            dictionary = self._read_cache(jieba.__version__) or self._build(tokenizer, jieba.__version__)
            tokenizer.FREQ, tokenizer.total = dictionary, dictionary.total
            tokenizer.get_DAG = functools.partial(_dag, dictionary)
            tokenizer.calc = _route
            tokenizer.initialized = True
            self._tokenizer = tokenizer
            log_.debug("Chinese segmenter ready in %.2f s", time.perf_counter() - started)
        except BaseException as exc:  # recorded and re-raised to every waiter
            log_.exception("loading the jieba dictionary failed")
            self._error = exc
        finally:
            self._ready.set()

    def _cache_file(self, version: str) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / f"jieba-{version}-v{_CACHE_FORMAT}.dict"

    def _read_cache(self, version: str) -> Dictionary | None:
        path = self._cache_file(version)
        if path is None or not path.is_file():
            return None
        try:
            return Dictionary.read(path)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            log_.warning("ignoring unreadable segmenter cache %s: %s", path, exc)
            return None

    def _build(self, tokenizer: Any, version: str) -> Dictionary:
        self._building = True
        path = self._cache_file(version)
        if path is not None and _build_in_child(path):
            built = self._read_cache(version)
            if built is not None:
                return built
        with tokenizer.get_dict_file() as handle:
            dictionary = Dictionary.parse(handle.read())
        if path is not None:
            try:
                dictionary.write(path)
            except OSError as exc:  # a read-only cache dir costs start-up time, nothing else
                log_.warning("could not write the segmenter cache %s: %s", path, exc)
        return dictionary
