"""`decode`: one `__consumer_offsets` record from hex, printed as JSON (like Kafka's offsets formatter)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import UserError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "decode",
        help="decode one __consumer_offsets record given as hex",
        description="Decode one __consumer_offsets record. Prints one JSON object with the record type, "
        "key and value, using the field names of Kafka's message specs.",
    )
    p.add_argument("--key", required=True, metavar="HEX", help="the record key, hex (spaces and 0x allowed)")
    p.add_argument("--value", metavar="HEX", help="the record value, hex; omit it for a tombstone")
    p.set_defaults(run=run)


def parse_hex(text: str, option: str) -> bytes:
    """Hex with optional 0x prefix and whitespace; errors name the option and the character."""
    start = len(text) - len(text.lstrip())
    if text[start : start + 2].lower() == "0x":
        start += 2
    digits = []
    for i in range(start, len(text)):
        ch = text[i]
        if ch.isspace():
            continue
        if ch not in "0123456789abcdefABCDEF":
            raise UserError(f"{option}: {ch!r} at character {i + 1} is not a hex digit")
        digits.append(ch)
    if len(digits) % 2:
        raise UserError(f"{option}: odd number of hex digits ({len(digits)}); bytes take two each")
    return bytes.fromhex("".join(digits))


def run(args: argparse.Namespace) -> int:
    # The codec builds its message schemas on import: only when a record is decoded.
    from kafka_offsets_model.codec import CodecError, decode_record, to_jsonable

    key = parse_hex(args.key, "--key")
    value = None if args.value is None else parse_hex(args.value, "--value")
    try:
        record = decode_record(key, value)
    except CodecError as exc:
        raise UserError(f"cannot decode: {exc}") from None
    json.dump(to_jsonable(record), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
