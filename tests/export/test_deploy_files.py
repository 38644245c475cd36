"""The Grafana dashboard and the Prometheus rules in deploy/: the dashboard is importable JSON, and every
metric their PromQL names is one the exporter really exports (or a recording rule of rules.yml); the
rules pass `promtool check rules` where promtool is installed. (tests/export/test_prometheus_cluster.py
runs every query against a real Prometheus.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from export.test_prometheus_exporter import Ring
from fakes.fake_pynvml import FakePynvml
from ring_test_tools import wait_until
from ui.live import fake_gpu_source
from xfertop.export.prometheus_exporter import Exporter
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "xfertop.json"
RULES = REPO / "deploy" / "prometheus" / "rules.yml"
METRIC = re.compile(r"\bxfertop_[A-Za-z0-9_:]+")


def _exported_names(tmp_path: Path) -> set[str]:
    """Every sample name a node with a GPU, a host and a rank exports, in both exposition formats."""
    ring = Ring(tmp_path)
    ring.write(30)
    gpu, host, jobs = fake_gpu_source(FakePynvml.h200s(1)), HostSource(), JobsSource(ring_dir=str(tmp_path))
    exporter = Exporter(gpu, host, jobs, host_label="node-a")
    try:
        states: list = []
        gpu.subscribe(states.append)
        gpu.start()
        wait_until(
            lambda: len(states) >= 2, 10.0, "two GPU snapshots (the PCIe counters start at the second)"
        )
        host.watch_pids({ring.writer._identity.pid})
        host.sample_once()
        host.sample_once()
        jobs.sample_once()
        text = generate_latest(exporter.registry).decode()
        openmetrics = generate_openmetrics(exporter.registry).decode()
    finally:
        gpu.stop()
    names = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    names |= {s.name for family in parse_openmetrics(openmetrics) for s in family.samples}
    return names


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    exprs += [
        variable["definition"] for variable in dashboard["templating"]["list"] if "definition" in variable
    ]
    return exprs


def test_the_dashboard_is_importable_json_with_the_panels_the_question_needs() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    titles = " | ".join(panel["title"] for panel in dashboard["panels"])
    for needed in (
        "Step time breakdown per rank",
        "Ranks by verdict",
        "Straggler",
        "PCIe RX",
        "PCIe TX",
        "GPU utilisation",
    ):
        assert needed in titles, needed
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert {"datasource", "job_id", "host"} <= variables


def test_every_metric_the_dashboard_and_rules_name_is_exported(tmp_path: Path) -> None:
    exported = _exported_names(tmp_path)
    rules_text = RULES.read_text()
    recorded = set(re.findall(r"^\s*- record: (\S+)$", rules_text, flags=re.MULTILINE))
    assert recorded, "no recording rules found"
    rule_exprs = rules_text.split("groups:", 1)[1]
    named = set(METRIC.findall(" ".join(_dashboard_exprs()))) | set(METRIC.findall(rule_exprs))
    unknown = named - exported - recorded
    assert not unknown, f"named but not exported: {sorted(unknown)}"
    # The check can fail: a misspelt name is caught.
    assert "xfertop_rank_step_second_total" not in exported


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool is absent (Debian: apt-get install prometheus)"
)
def test_promtool_accepts_the_rules() -> None:
    done = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
