"""`dump`: read `__consumer_offsets` from a cluster and print each record as one JSON line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import kafka_connection


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dump",
        help="print __consumer_offsets records as JSON lines",
        description="Consume __consumer_offsets (read_committed) and print one JSON line per record: "
        "partition, offset, timestamp and the decoded record. Undecodable records are skipped and "
        "counted on stderr.",
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker to connect to")
    p.add_argument("--group", metavar="G", help="only records of this group (reads only its partition)")
    p.add_argument("--from-beginning", action="store_true", help="start at the oldest record, not the newest")
    p.add_argument(
        "--no-follow",
        action="store_true",
        help="stop at the end offsets seen at start instead of waiting for new records",
    )
    kafka_connection.add_arguments(p)
    p.set_defaults(run=run)


def record_group(record: dict[str, Any]) -> str | None:
    key = record["key"]
    group = key.get("group", key.get("GroupId"))
    return group if isinstance(group, str) else None


def run(args: argparse.Namespace) -> int:
    # The codec builds its message schemas on import: only when a record is decoded.
    from kafka_offsets_model.codec import CodecError, decode_record, to_jsonable

    from ..adapters.offsets_topic import OffsetsTopicReader  # kafka-python takes ~1.5 s to import: only here

    settings = kafka_connection.connection(args, args.bootstrap_server)
    if args.command_config is not None:
        kafka_connection.check_login(settings)
    skipped = 0
    first_error = ""
    with OffsetsTopicReader(args.bootstrap_server, settings) as reader:
        partitions = None if args.group is None else [reader.partition_for(args.group)]
        for raw in reader.records(partitions, from_beginning=args.from_beginning, follow=not args.no_follow):
            try:
                record = decode_record(raw.key, raw.value)
            except CodecError as exc:
                skipped += 1
                first_error = first_error or f"partition {raw.partition} offset {raw.offset}: {exc}"
                continue
            if args.group is not None and record_group(record) != args.group:
                continue
            line = {"partition": raw.partition, "offset": raw.offset, "timestamp": raw.timestamp, **record}
            sys.stdout.write(json.dumps(to_jsonable(line)) + "\n")
            sys.stdout.flush()
    if skipped:
        print(f"skipped {skipped} undecodable records (first: {first_error})", file=sys.stderr)
    return 0
