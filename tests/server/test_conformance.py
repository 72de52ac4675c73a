"""The MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in .ci/conformance
with the Node.js it needs and installed there by `make conformance`, which `make test` runs) against
the installed command serving streamable HTTP at its defaults: the generic server scenarios, each
of whose checks must succeed. Outside CI a machine without the suite installed skips, saying why;
in CI (`CI` set) that is a failure."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ..http_server import free_port, http_server
from ..wire import environ

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".ci" / "conformance"
NODE = FOLDER / "node_modules" / ".bin" / "node"
SUITE = FOLDER / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "dns-rebinding-protection",
)
# Seconds for one scenario: a bound that only catches a hang, and the test's own bound (120 s) still
# leaves room for the others when one hangs.
_TIMEOUT = 60


def _suite() -> tuple[str, str]:
    missing = None
    if not NODE.exists() or not SUITE.exists():
        missing = f"{FOLDER.relative_to(ROOT)}/node_modules is incomplete; run `make conformance` (needs npm)"
    if missing is None:
        return str(NODE), str(SUITE)
    message = f"the MCP conformance check cannot run: {missing}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def scenario(url: str, name: str, out: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Run one scenario against `url`: (exit code, its checks, its output)."""
    node, suite = _suite()
    folder = out / name
    argv = [node, suite, "server", "--url", url, "--scenario", name, "--output-dir", str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd=out, env=environ())
    found = sorted(folder.glob("*/checks.json"))
    checks: list[dict[str, Any]] = json.loads(found[-1].read_text(encoding="utf-8")) if found else []
    return done.returncode, checks, done.stdout + done.stderr


def test_the_generic_server_scenarios_pass(tmp_path: Path, cache_dir: Path, segmenter: Any) -> None:
    _suite()
    with http_server(tmp_path, cache_dir) as served, ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda name: (name, *scenario(served.url, name, tmp_path)), SCENARIOS))
    failures = []
    for name, code, checks, output in runs:
        bad = [c for c in checks if c["status"] not in ("SUCCESS", "INFO")]
        if code != 0 or not checks or bad:
            shown = json.dumps(bad, ensure_ascii=False)[:2000] if checks else output[-2000:]
            failures.append(f"{name} (exit {code}, {len(checks)} checks): {shown}")
    assert not failures, "\n".join(failures)


def test_the_check_can_fail(tmp_path: Path) -> None:
    """With no server at the URL the scenario's check fails and the suite exits non-zero."""
    _suite()
    code, checks, _ = scenario(f"http://127.0.0.1:{free_port()}/mcp", "ping", tmp_path)
    assert code != 0 and [c["status"] for c in checks] == ["FAILURE"]


def test_the_suite_and_node_are_pinned_and_the_lockfile_names_no_download_urls() -> None:
    wanted = json.loads((FOLDER / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((FOLDER / "package-lock.json").read_text(encoding="utf-8"))
    deps = wanted["dependencies"]
    assert set(deps) == {"@modelcontextprotocol/conformance", "node"}
    assert deps == {name: lock["packages"][f"node_modules/{name}"]["version"] for name in deps}
    assert int(deps["node"].split(".")[0]) >= 22, "the suite needs Node.js 22 or later"
    assert wanted["allowScripts"] == {"node": True}, "only the Node.js package runs an install script"
    assert all("resolved" not in entry for entry in lock["packages"].values())
    assert "omit-lockfile-registry-resolved=true" in (FOLDER / ".npmrc").read_text(encoding="utf-8").splitlines()
