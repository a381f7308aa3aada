"""`kafka-sandbox`: run the Kafka wire-protocol simulator in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from offset_expiry.durations import format_duration_ms, parse_duration_ms

from .broker import BrokerRuntime, broker_config

PROG = "kafka-sandbox"


class UserError(Exception):
    """A bad flag or a port in use: one line on stderr and exit code 2, never a traceback."""


class _Parser(argparse.ArgumentParser):
    """One line naming the problem, and exit 2 (argparse would print the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Serve the Kafka protocol with the project's sandbox broker: in-memory topics, a classic "
        "group coordinator and a real __consumer_offsets topic. For tests and demos only. Prints one line "
        "when ready and runs until interrupted.",
    )
    p.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT", help="address to listen on")
    p.add_argument(
        "--offsets-retention", default="7d", metavar="DURATION", help="offsets.retention.minutes, e.g. 7d"
    )
    p.add_argument(
        "--offsets-partitions",
        type=int,
        default=50,
        metavar="N",
        help="offsets.topic.num.partitions (default 50)",
    )
    p.add_argument("--debug", action="store_true", help="log every refused request and dropped connection")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise UserError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:9092), got {text!r}")
    return host.strip("[]"), int(port_text)


def run(args: argparse.Namespace) -> int:
    host, port = parse_listen(args.listen)
    try:
        retention_ms = parse_duration_ms(args.offsets_retention)
    except ValueError as exc:
        raise UserError(f"--offsets-retention: {exc}") from None
    try:
        config = broker_config(retention_ms, offsets_partitions=args.offsets_partitions)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s")
    runtime = BrokerRuntime(config, host=host, port=port)
    return asyncio.run(_serve(runtime, config.offsets_retention_ms, config.offsets_partitions))


async def _serve(runtime: BrokerRuntime, retention_ms: int, partitions: int) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await runtime.start()
    except OSError as exc:
        raise UserError(
            f"cannot listen on {runtime.ctx.host}:{runtime.ctx.port}: {exc.strerror or exc}"
        ) from None
    print(
        f"sandbox broker (a test double) listening on {runtime.ctx.host}:{runtime.ctx.port}, "
        f"offsets retention {format_duration_ms(retention_ms)}, {partitions} __consumer_offsets partitions",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await runtime.close()
    print("sandbox broker stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
