"""Raw JSON-RPC peers of the installed server, over stdio pipes and over streamable HTTP, that keep
every message the server sends exactly as it came off the wire (for schema checks by outside
tools) along with the method of the request each response answers."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx2 as httpx

PROTOCOL_VERSION = "2025-11-25"  # the version the TypeScript SDK's clients ask for
_WAIT = 60.0  # seconds for one answer: a bound that only catches a hang


class WireError(AssertionError):
    """The server did not answer as a JSON-RPC peer must."""


class Peer:
    """One client connection. `records` holds every message the server sent, in arrival order,
    each as {"message": ..., "method": <the answered request's method, for responses>}."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._incoming: queue.Queue[dict[str, Any] | BaseException] = queue.Queue()
        self._ids = itertools.count(1)
        self._methods: dict[Any, str] = {}
        self._lock = threading.Lock()
        self._unclaimed: list[dict[str, Any]] = []

    # ---- what a transport implements ----------------------------------------------------------

    def _post(self, message: Mapping[str, Any]) -> None:
        raise NotImplementedError

    # ---- shared ---------------------------------------------------------------------------------

    def _heard(self, message: Any) -> None:
        """A message from the server: recorded, then queued for whoever waits."""
        with self._lock:
            record: dict[str, Any] = {"message": message}
            if isinstance(message, dict) and ("result" in message or "error" in message):
                method = self._methods.get(message.get("id"))
                if method is not None:
                    record["method"] = method
            self.records.append(record)
        self._incoming.put(message if isinstance(message, dict) else {"unexpected": message})

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            item = self._incoming.get(timeout=timeout)
        except queue.Empty:
            raise WireError(f"no message from the server within {timeout} s") from None
        if isinstance(item, BaseException):
            raise WireError(f"the connection failed: {item!r}") from item
        return item

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._post(message)

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; its response (result or error). Messages that come first stay recorded;
        a request from the server is refused (this client declares no capabilities)."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        with self._lock:
            self._methods[request_id] = method
        self._post(message)
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, f"the answer to {method}")

    def wait_for(self, wanted: Callable[[dict[str, Any]], bool], what: str, timeout: float = _WAIT) -> dict[str, Any]:
        """The first message not claimed yet (already received or still to come) that `wanted`
        accepts; `what` names it in the error when none comes within `timeout` seconds."""
        for message in self._unclaimed:
            if wanted(message):
                self._unclaimed.remove(message)
                return message
        while True:
            try:
                message = self._next(timeout)
            except WireError as exc:
                raise WireError(f"waiting for {what}: {exc}") from exc
            if "method" in message and "id" in message:  # a request from the server: refused
                self._post({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
            if wanted(message):
                return message
            self._unclaimed.append(message)

    def methods(self) -> list[str]:
        return [r["message"].get("method", "") for r in self.records if isinstance(r["message"], dict)]


class StdioPeer(Peer):
    """The command as a child process on pipes, one message per line."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> None:
        super().__init__()
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env), cwd=cwd
        )
        self._stderr: list[bytes] = []
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self._heard(json.loads(line))
            except ValueError:
                self._heard(line.decode("utf-8", "replace"))
        self._incoming.put(EOFError("the server closed stdout"))

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _post(self, message: Mapping[str, Any]) -> None:
        self.send_line(json.dumps(message, ensure_ascii=False).encode("utf-8"))

    def send_line(self, data: bytes) -> None:
        """Raw bytes and a newline on the server's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def close(self, timeout: float = 30) -> int:
        """Close stdin and wait for the server to exit; its exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def finish(self) -> None:
        """Kill the server if it still runs; release the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for thread in self._threads:
            thread.join(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


class HttpPeer(Peer):
    """Streamable HTTP at `url`: each message a POST, answers as JSON or server-sent events, and
    (stateful servers) the standalone GET stream read in a thread of its own."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.url = url
        self._headers = {"Accept": "application/json, text/event-stream", **(headers or {})}
        self._http = httpx.Client(timeout=httpx.Timeout(_WAIT, read=None))
        self._session: str | None = None
        self._stream: threading.Thread | None = None
        self._closing = threading.Event()

    def _common(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._session is not None:
            headers["Mcp-Session-Id"] = self._session
            headers["Mcp-Protocol-Version"] = PROTOCOL_VERSION
        return headers

    def _post(self, message: Mapping[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        with self._http.stream(
            "POST", self.url, content=body, headers={**self._common(), "Content-Type": "application/json"}
        ) as response:
            if response.headers.get("mcp-session-id") and self._session is None:
                self._session = response.headers["mcp-session-id"]
            kind = response.headers.get("content-type", "")
            if kind.startswith("text/event-stream"):
                for data in _events(response.iter_lines()):
                    self._heard(json.loads(data))
            else:
                text = response.read()
                if text:
                    self._heard(json.loads(text))
                elif response.status_code != 202:
                    raise WireError(f"POST answered {response.status_code} with no body")

    def listen(self) -> None:
        """Open the standalone GET stream (server-initiated notifications) in a thread."""

        def run() -> None:
            try:
                with self._http.stream("GET", self.url, headers=self._common()) as response:
                    if response.status_code != 200:
                        return
                    for data in _events(response.iter_lines()):
                        self._heard(json.loads(data))
            except httpx.HTTPError:
                if not self._closing.is_set():
                    raise

        self._stream = threading.Thread(target=run, daemon=True)
        self._stream.start()

    def close(self) -> None:
        self._closing.set()
        if self._session is not None:
            with contextlib.suppress(httpx.HTTPError):
                self._http.delete(self.url, headers=self._common())
        self._http.close()


def _events(lines: Iterator[str]) -> Iterator[str]:
    """The data of each server-sent event (events without data, like priming ones, skipped)."""
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


# What tests/conftest.py sets for the servers most tests start (MCP_MEMORY_SEMANTIC), unless the
# machine running the suite set it itself.
SUITE_SEMANTIC = "off"
_SET_BY_SUITE = "MCP_MEMORY_SEMANTIC" not in os.environ


def environ(**extra: str) -> dict[str, str]:
    """The environment a server starts with at its defaults: the suite's own setting dropped."""
    inherited = dict(os.environ)
    if _SET_BY_SUITE:
        inherited.pop("MCP_MEMORY_SEMANTIC", None)
    return {**inherited, **extra}
