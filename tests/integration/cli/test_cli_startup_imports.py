"""The CLI starts quickly: a command loads Kopf, the Kubernetes and Kafka clients, Spark, YAML or jsonschema only
when it runs and needs them, never to build its parser (bench/startup.py, docs/performance.md "CLI start-up").
Kopf with the Kubernetes client costs about 2 CPU-s of start-up, the policy's reader (YAML, jsonschema) 0.4;
every `--help` and the start of every command paid them before.

One child process (the check reads a fresh interpreter's `sys.modules`): every command's `--help`, then a
record decoded, as a user's shell would run them one after another.
"""

from __future__ import annotations

import json
import subprocess
import sys

from kafka_offsets_model.codec import offset_commit

KEY, VALUE = offset_commit("billing", "orders", 3, offset=42, commit_timestamp=1763700000000, leader_epoch=1)
HEAVY = ("kopf", "kubernetes", "kafka", "pyspark", "pyarrow", "aiohttp", "prometheus_client", "jsonschema", "yaml",
         "asyncio")
COMMANDS = ("decode", "dump", "analyze", "run", "restore", "reset")

PROBE = """
import contextlib, io, json, sys
from kafka_offset_operator.cli import main

def imported():
    return sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)

out = {}
for argv in [["--help"], *[[c, "--help"] for c in json.loads(sys.argv[2])]]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
    out[" ".join(argv)] = imported()
with contextlib.redirect_stdout(io.StringIO()) as decoded:
    code = main(["decode", "--key", sys.argv[3], "--value", sys.argv[4]])
out["decode"] = imported()
out["decoded"] = [code, json.loads(decoded.getvalue())["value"]["offset"]]
print(json.dumps(out))
"""


def test_no_command_loads_the_heavy_libraries_to_parse_its_flags() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), json.dumps(COMMANDS), KEY.hex(),
                           VALUE.hex()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("decoded") == [0, 42]  # the decode really ran
    assert out == {name: [] for name in ["--help", *[f"{c} --help" for c in COMMANDS], "decode"]}
