"""The Grafana dashboard (integrations/grafana): a dashboard Grafana loads (the fields it requires, unique
panel ids, panels on the grid, a Prometheus datasource variable), whose every query reads a metric the
operator exports under that name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kafka_offset_operator.adapters import metrics

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "integrations" / "grafana" / "kafka-offset-operator.json"
PANEL_TYPES = {"stat", "timeseries", "table", "bargauge", "gauge", "text"}


def exported() -> set[str]:
    """Every sample name the operator's collectors expose (counters with _total, histograms' _bucket, ...)."""
    names: set[str] = set()
    for collector in vars(metrics).values():
        describe = getattr(collector, "describe", None)
        if callable(describe) and hasattr(collector, "_name"):
            for family in describe():
                base = family.name
                names |= {base, f"{base}_total", f"{base}_bucket", f"{base}_count", f"{base}_sum", f"{base}_created"}
    return names


def test_the_dashboard_has_what_grafana_needs() -> None:
    dash: dict[str, Any] = json.loads(DASHBOARD.read_text())
    assert dash["title"] and dash["uid"] and isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        assert panel["type"] in PANEL_TYPES and panel["title"], panel["id"]
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and all(t["expr"] and t["refId"] for t in panel["targets"]), panel["title"]


def test_every_query_reads_exported_metrics() -> None:
    names = exported()
    dash = json.loads(DASHBOARD.read_text())
    for panel in dash["panels"]:
        for target in panel["targets"]:
            used = set(re.findall(r"kafka_offset_operator_[a-z_]+", target["expr"]))
            assert used and used <= names, f"{panel['title']}: {sorted(used - names)} not exported"
