"""Screening time on hostile text: redaction (what every write runs), the sieve's signals and the
value score, on the write that once hung the server, on labelled digit runs of growing length, and
on the hostile texts of the linear-time test (tests/patterns.py) at 10 KB and 100 KB.

python -m benchmarks.redaction [--runs 5] [--limit 20] [--all]

Each figure is the median of `--runs` runs. A case still running after `--limit` seconds of CPU is
stopped and reported as "> limit": how the code before this work is measured (PYTHONPATH pointing
at its sources), where a 39-digit run would take hours. `--all` also times redaction on each of
the thousand hostile texts at 100 KB alone and reports the slowest.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import validate
from mcp_memory_server.sieve import signals, value
from mcp_memory_server.text import redaction as redact
from tests.patterns import CpuLimitReached, cpu_limit, hostile_mixes, hostile_texts

THE_WRITE = "aws_secret_access_key=123456789012345678901234567890123456789a"


def timed(work: Callable[[], object], runs: int, limit: float) -> float | None:
    """Median seconds of `runs` runs, or None when one ran past `limit` seconds of CPU."""
    times = []
    for _ in range(runs):
        try:
            with cpu_limit(limit):
                start = time.perf_counter()
                work()
                times.append(time.perf_counter() - start)
        except CpuLimitReached:
            return None
    return statistics.median(times)


def shown(seconds: float | None, limit: float) -> str:
    if seconds is None:
        return f"> {limit:g} s (stopped)"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def screen(text: str) -> object:
    try:
        return validate.screen(text)
    except InvalidInput:
        return None


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    cores = sum(line.startswith("processor") for line in cpuinfo)
    return f"{model or platform.processor()}, {cores} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=float, default=20.0, help="CPU seconds before a case is stopped")
    parser.add_argument("--all", action="store_true", help="also each hostile text alone at 100 KB")
    args = parser.parse_args()
    runs, limit = args.runs, args.limit
    print(f"# {machine()}; package at {Path(redact.__file__).parent}")
    redact.redact("warm-up: password: hunter2!, 密码是 9527")  # compiles the rules (lazily) once

    print("\n| text | redact |\n|---|---|")
    digits = "1234567890" * 10_001
    cases = [("the 62-character write (39 digits)", THE_WRITE)]
    for n in (20, 22, 24, 26, 10_000, 100_000):
        cases.append((f"label + {n:,} digits + a", "aws_secret_access_key=" + digits[:n] + "a"))
    for name, text in cases:
        print(f"| {name} | {shown(timed(lambda t=text: redact.redact(t), runs, limit), limit)} |", flush=True)

    work: dict[str, Callable[[str], object]] = {
        "redact": redact.redact,
        "screen (remember)": screen,
        "detect_signals (extract)": signals.detect_signals,
        "value score": lambda t: value.evaluate(t, category="fact", importance=0.5, source="user"),
    }
    print("\n12 hostile texts of each size (tests/patterns.py); median per text, and the slowest text\n")
    print("| function | 10 KB median | 10 KB slowest | 100 KB median | 100 KB slowest |\n|---|---|---|---|---|")
    mixes = {size: hostile_mixes(size) for size in (10_000, 100_000)}
    for name, run in work.items():
        cells = []
        for texts in mixes.values():
            each = [timed(lambda t=text, r=run: r(t), runs, limit) for text in texts]  # type: ignore[misc]
            done = [t for t in each if t is not None]
            if len(done) == len(each):
                cells += [shown(statistics.median(done), limit), shown(max(done), limit)]
            else:  # the median and the slowest are past the limit: say how many were stopped
                cells += [f"{len(each) - len(done)} of {len(each)} > {limit:g} s", shown(None, limit)]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)

    if args.all:
        texts = hostile_texts(100_000)
        slowest: list[tuple[float, str]] = []
        stopped = []
        for name, text in texts.items():
            seconds = timed(lambda t=text: redact.redact(t), 1, limit)
            if seconds is None:
                stopped.append(name)
            else:
                slowest.append((seconds, name))
        slowest.sort(reverse=True)
        print(f"\nredact on each of {len(texts)} hostile texts of 100 KB alone: {len(stopped)} stopped")
        for seconds, name in slowest[:5]:
            print(f"  {shown(seconds, limit):>10}  {name}")
        for name in stopped[:10]:
            print(f"  {'stopped':>10}  {name}")


if __name__ == "__main__":
    main()
