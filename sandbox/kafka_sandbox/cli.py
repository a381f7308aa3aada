"""`kafka-sandbox`: run the Kafka wire-protocol simulator in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from kafka_offsets_model.durations import format_duration_ms, parse_duration_ms

from .broker import BrokerRuntime, broker_config
from .security import CLIENT_AUTH, MECHANISMS, PROTOCOLS, ListenerSecurity, server_ssl_context

PROG = "kafka-sandbox"


class SandboxUsageError(Exception):
    """A bad flag or a port in use: one line on stderr and exit code 2, never a traceback."""


class _SandboxParser(argparse.ArgumentParser):
    """One line naming the problem, and exit 2 (argparse would print the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _SandboxParser(
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
    sec = p.add_argument_group("security (one listener, one protocol)")
    sec.add_argument("--security-protocol", choices=PROTOCOLS, default="PLAINTEXT", help="default PLAINTEXT")
    sec.add_argument("--ssl-cert", metavar="PEM", help="server certificate (chain) for SSL and SASL_SSL")
    sec.add_argument("--ssl-key", metavar="PEM", help="its private key")
    sec.add_argument(
        "--ssl-ca", metavar="PEM", help="CA certificates that client certificates are checked against"
    )
    sec.add_argument(
        "--ssl-client-auth", choices=tuple(CLIENT_AUTH), default="none", help="ssl.client.auth (default none)"
    )
    sec.add_argument(
        "--sasl-user",
        action="append",
        default=[],
        metavar="NAME=PASSWORD",
        help="a SASL user (repeatable; shows in the process list: prefer --sasl-users-file)",
    )
    sec.add_argument("--sasl-users-file", metavar="FILE", help="SASL users, one NAME=PASSWORD per line")
    sec.add_argument(
        "--sasl-mechanism",
        action="append",
        choices=MECHANISMS,
        metavar="MECHANISM",
        help=f"enable this SASL mechanism (repeatable; default all of {', '.join(MECHANISMS)})",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except SandboxUsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise SandboxUsageError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:9092), got {text!r}")
    return host.strip("[]"), int(port_text)


def run(args: argparse.Namespace) -> int:
    host, port = parse_listen(args.listen)
    try:
        retention_ms = parse_duration_ms(args.offsets_retention)
    except ValueError as exc:
        raise SandboxUsageError(f"--offsets-retention: {exc}") from None
    try:
        config = broker_config(retention_ms, offsets_partitions=args.offsets_partitions)
    except ValueError as exc:
        raise SandboxUsageError(str(exc)) from None
    security = listener_security(args)
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s")
    runtime = BrokerRuntime(config, host=host, port=port, security=security)
    return asyncio.run(_serve(runtime, config.offsets_retention_ms, config.offsets_partitions))


def listener_security(args: argparse.Namespace) -> ListenerSecurity:
    """The --security-protocol, --ssl-* and --sasl-* flags as one checked ListenerSecurity."""
    ssl_context = None
    if args.ssl_cert or args.ssl_key:
        if not (args.ssl_cert and args.ssl_key):
            raise SandboxUsageError("--ssl-cert and --ssl-key go together")
        try:
            ssl_context = server_ssl_context(args.ssl_cert, args.ssl_key, args.ssl_ca, args.ssl_client_auth)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise SandboxUsageError(f"--ssl-cert/--ssl-key/--ssl-ca: {exc}") from None
    users: dict[str, str] = {}
    lines = list(args.sasl_user)
    if args.sasl_users_file:
        try:
            with open(args.sasl_users_file, encoding="utf-8") as f:
                lines += [line.strip() for line in f if line.strip() and not line.startswith("#")]
        except OSError as exc:
            raise SandboxUsageError(f"--sasl-users-file: {exc.strerror or exc}") from None
    for line in lines:
        name, sep, password = line.partition("=")
        if not sep or not name or not password:
            raise SandboxUsageError(
                "--sasl-user/--sasl-users-file want NAME=PASSWORD, got a line without '=' or a value"
            )
        users[name] = password
    try:
        return ListenerSecurity.create(
            args.security_protocol,
            ssl_context=ssl_context,
            sasl_users=users,
            sasl_mechanisms=args.sasl_mechanism,
        )
    except ValueError as exc:
        message = str(exc).replace("ssl_context", "--ssl-cert/--ssl-key").replace("sasl_users", "--sasl-user")
        raise SandboxUsageError(message.replace("sasl_mechanisms", "--sasl-mechanism")) from None


def _describe(security: ListenerSecurity) -> str:
    if not security.uses_sasl:
        return security.protocol
    return f"{security.protocol} (SASL {', '.join(security.mechanisms)})"


async def _serve(runtime: BrokerRuntime, retention_ms: int, partitions: int) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await runtime.start()
    except OSError as exc:
        raise SandboxUsageError(
            f"cannot listen on {runtime.ctx.host}:{runtime.ctx.port}: {exc.strerror or exc}"
        ) from None
    print(
        f"sandbox broker (a test double) listening on {runtime.ctx.host}:{runtime.ctx.port}, "
        f"offsets retention {format_duration_ms(retention_ms)}, {partitions} __consumer_offsets partitions, "
        f"{_describe(runtime.ctx.security)}",
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
