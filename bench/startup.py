"""Start-up of the `kafka-offset-operator` command, per subcommand: wall and CPU of a fresh process, and which
heavy libraries it imported (docs/performance.md, "CLI start-up").

    .venv/bin/python bench/startup.py                           # 3 rounds of every command, the median printed
    .venv/bin/python bench/startup.py --save /tmp/before.json   # keep the figures ...
    .venv/bin/python bench/startup.py --compare /tmp/before.json  # ... and print after/before ratios beside

Each row is `python -m kafka_offset_operator ARGS` as a user (or a test) starts it, timed from fork to exit:
wall, and CPU (user+system) from the child's own rusage, so other processes' load does not count (it still
stretches the wall). The last row is the import of what `run` loads before Kopf's first request (the
operator's handlers, Kopf, the Kubernetes and Kafka clients): a running operator needs a cluster, and what
it does after the import is Kopf's and the API server's. One extra run per row lists which of the heavy
libraries the process imported, by `sys.modules` at exit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kafka_offsets_model.codec import offset_commit

KEY, VALUE = offset_commit("billing", "orders", 3, offset=42, commit_timestamp=1763700000000, leader_epoch=1)
HEAVY = ("kopf", "kubernetes", "kafka", "pyspark", "pyarrow", "jsonschema", "yaml", "aiohttp", "prometheus_client",
         "asyncio")
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "--version": ["--version"],
    "decode (a record)": ["decode", "--key", KEY.hex(), "--value", VALUE.hex()],
    "decode --help": ["decode", "--help"],
    "dump --help": ["dump", "--help"],
    "analyze --help": ["analyze", "--help"],
    "restore --help": ["restore", "--help"],
    "reset --help": ["reset", "--help"],
    "run --help": ["run", "--help"],
}
RUN_IMPORTS = "run's imports"
# What `run` imports before it talks to the API server (commands/run.py's function, then the runtime).
RUN_IMPORT_CODE = ("import kafka_offset_operator.runtime, kafka_offset_operator.adapters.metrics, "
                   "kafka_offset_operator.engines.dispatch, kafka_offset_operator.context")
# Runs the CLI as `-m` does, then reports the heavy top-level packages it imported, on stderr's last line.
PROBE = """
import runpy, sys
sys.argv = ["kafka_offset_operator", *sys.argv[1:]]
try:
    runpy.run_module("kafka_offset_operator", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
finally:
    print("HEAVY " + ",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


def _argv(name: str) -> list[str]:
    if name == RUN_IMPORTS:
        return [sys.executable, "-c", RUN_IMPORT_CODE]
    return [sys.executable, "-m", "kafka_offset_operator", *COMMANDS[name]]


def _once(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and its stderr's last line."""
    read, write = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: stdout to nowhere, stderr to the pipe
        os.close(read)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(write, 2)
        os.execv(argv[0], argv)
    os.close(write)
    with os.fdopen(read, "rb") as err:
        text = err.read().decode(errors="replace")
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0,):
        raise SystemExit(f"{argv[1:]} failed: {text.strip()[-400:]}")
    lines = text.strip().splitlines()
    return wall, usage.ru_utime + usage.ru_stime, lines[-1] if lines else ""


def measure(rounds: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in [*COMMANDS, RUN_IMPORTS]:
        argv = _argv(name)
        walls, cpus = [], []
        for _ in range(rounds):
            wall, cpu, _last = _once(argv)
            walls.append(wall)
            cpus.append(cpu)
        if name == RUN_IMPORTS:
            probe = [sys.executable, "-c", f"{RUN_IMPORT_CODE}\nimport sys\n"
                     f"print('HEAVY ' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"]
        else:
            probe = [sys.executable, "-c", PROBE.format(heavy=HEAVY), *COMMANDS[name]]
        _, _, last = _once(probe)
        heavy = last.removeprefix("HEAVY ").split(",") if last.startswith("HEAVY ") and last != "HEAVY " else []
        out[name] = {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "heavy": heavy}
    return out


def _load() -> float:
    return os.getloadavg()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per command (the median is shown)")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--compare", type=Path, help="a file --save wrote before: print after/before ratios")
    args = parser.parse_args()
    before = json.loads(args.compare.read_text()) if args.compare else None
    load_before = _load()
    figures = measure(args.rounds)
    print(f"CLI start-up, median of {args.rounds} fresh processes; load average {load_before:.1f} -> {_load():.1f} "
          f"on {os.cpu_count()} cores")
    head = f"{'command':<20} {'wall s':>7} {'CPU s':>6}"
    if before:
        head += f" {'CPU before':>10} {'CPU ratio':>9}"
    print(head + "  heavy libraries imported")
    for name, row in figures.items():
        line = f"{name:<20} {row['wall_s']:>7.2f} {row['cpu_s']:>6.2f}"
        if before and name in before:
            line += f" {before[name]['cpu_s']:>10.2f} {row['cpu_s'] / before[name]['cpu_s']:>9.2f}"
        print(line + "  " + (", ".join(row["heavy"]) or "-"))
    if args.save:
        args.save.write_text(json.dumps({**figures, "_load": load_before}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
