"""The `kafka-offset-operator` command: a table of subcommands, each in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .commands import analyze, decode, dump, reset, restore, run
from .errors import UserError

PROG = "kafka-offset-operator"
COMMANDS = (decode, dump, analyze, run, restore, reset)


class _OperatorParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; we print one line naming the problem, and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OperatorParser(prog=PROG, description="Manage Kafka consumer-group offsets declaratively.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OperatorParser)
    sub.required = True
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `... | head` closed our stdout: not an error worth a traceback.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
