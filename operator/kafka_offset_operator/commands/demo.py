"""`demo`: the README's first command. Until the operator demo exists it decodes a built-in sample of
`__consumer_offsets` records, the records a broker writes for a consumer group's life."""

from __future__ import annotations

import argparse
import json
from typing import Any

from offset_expiry.codec import decode_record, to_jsonable

from ..samples import sample_records


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the demo on built-in data", description=__doc__)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for note, key, value in sample_records():
        record = decode_record(key, value)
        print(f"# {note}")
        print(f"#   key={key.hex()} value={'null' if value is None else value.hex()}")
        print(json.dumps(to_jsonable(record)))
    return 0
