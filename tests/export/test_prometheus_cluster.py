"""Two nodes, one job, a real Prometheus: what a cluster's user sees of its input pipeline.

Node A and node B each run an exporter (its own host label and ring directory) and one rank of the same
torchelastic job, a real CPU training process under `xfertop run` whose DataLoader sleeps a known time:
rank 0 on node A waits 20 ms of each 40 ms step (50%), rank 1 on node B 10 ms of 40 (25%). Prometheus
scrapes both every second. Through its HTTP API: the expected series, each rank's data-wait share from
rate(), the dashboard's and the rules' PromQL; the --prometheus source sees both ranks in one job and
names the straggler; counters survive an exporter restart without a reset.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from export.prometheus_cluster import (
    PROMETHEUS,
    REPO,
    XFERTOP,
    ExporterProcess,
    PrometheusServer,
    free_port,
    start_training,
    stop_process,
)
from ring_test_tools import child_env, wait_until
from xfertop.analysis.job_analysis import analyse
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="the prometheus binary is absent (Debian: apt-get install prometheus)"
)

RUN_ID = "cluster-test"
#: (host label, rank, data wait s, compute s): the wait share is wait / (wait + compute).
NODES = (("node-a", 0, 0.020, 0.020), ("node-b", 1, 0.010, 0.030))
SHARE = {host: wait / (wait + compute) for host, _rank, wait, compute in NODES}
DASHBOARD = REPO / "deploy" / "grafana" / "xfertop.json"


@dataclass
class Cluster:
    prometheus: PrometheusServer
    exporters: dict[str, ExporterProcess]
    tmp: Path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("cluster")
    prometheus = PrometheusServer(tmp)
    trainings: list[subprocess.Popen[str]] = []
    exporters: dict[str, ExporterProcess] = {}
    try:
        for host, rank, wait_s, compute_s in NODES:
            rings = tmp / f"rings-{host}"
            trainings.append(
                start_training(
                    tmp,
                    rings,
                    wait_s,
                    compute_s,
                    TORCHELASTIC_RUN_ID=RUN_ID,
                    RANK=str(rank),
                    LOCAL_RANK="0",
                    WORLD_SIZE="2",
                )
            )
            exporters[host] = ExporterProcess(rings, host, free_port(), tmp / f"state-{host}.json")
            prometheus.add_target(host, exporters[host].address)
        # Enough scrapes for rates over 10 s: each rank has series covering at least 12 s.
        wait_until(
            lambda: _covered_s(prometheus) >= 12, 90.0, "12 s of both ranks' steps in Prometheus", every_s=0.5
        )
        yield Cluster(prometheus, exporters, tmp)
    finally:
        for exporter in exporters.values():
            exporter.stop()
        for training in trainings:
            stop_process(training)
        prometheus.stop()


def _covered_s(prometheus: PrometheusServer) -> float:
    """Seconds of scrapes (1 s apart) the least-covered rank has in Prometheus (0 until both are there)."""
    found = prometheus.query("count_over_time(xfertop_rank_steps_total[1m])")
    if len(found) < len(NODES):
        return 0.0
    return min(float(series["value"][1]) for series in found) - 1


def _by_host(result: list[dict]) -> dict[str, float]:
    return {series["metric"]["host"]: float(series["value"][1]) for series in result}


def test_promql_gives_each_ranks_data_wait_share_from_its_counters(cluster: Cluster) -> None:
    shares = _by_host(
        cluster.prometheus.query(
            "rate(xfertop_rank_data_wait_seconds_total[10s]) / rate(xfertop_rank_step_seconds_total[10s])"
        )
    )
    assert set(shares) == set(SHARE)
    for host, share in shares.items():
        assert abs(share - SHARE[host]) < 0.05, (host, share)
    # The labels the dashboard groups by, on the series Prometheus stored.
    steps = cluster.prometheus.query("xfertop_rank_steps_total")
    labels = {series["metric"]["host"]: series["metric"] for series in steps}
    assert {labels[host]["rank"] for host in SHARE} == {"0", "1"}
    assert {labels[host]["job_id"] for host in SHARE} == {f"run:{RUN_ID}"}
    assert {labels[host]["job_name"] for host in SHARE} == {"train.py"}
    verdicts = cluster.prometheus.query('xfertop_rank_verdict{xfertop_rank_verdict="input-bound"} == 1')
    assert {series["metric"]["host"] for series in verdicts} == set(SHARE)


def test_the_exposition_parses_as_prometheus_text_and_as_openmetrics(cluster: Cluster) -> None:
    exporter = cluster.exporters["node-a"]
    text_families = {family.name: family for family in text_string_to_metric_families(exporter.metrics())}
    assert text_families["xfertop_rank_steps"].type == "counter"
    assert text_families["xfertop_host_memory_total_bytes"].type == "gauge"
    openmetrics = exporter.metrics("application/openmetrics-text; version=1.0.0")
    families = {family.name: family for family in parse_openmetrics(openmetrics)}
    assert families["xfertop_rank_verdict"].type == "stateset"
    assert families["xfertop_rank_status"].type == "stateset"
    assert families["xfertop_rank_data_wait_seconds"].unit == "seconds"
    names = {sample.name for sample in families["xfertop_rank_steps"].samples}
    assert names == {"xfertop_rank_steps_total", "xfertop_rank_steps_created"}


def test_the_prometheus_source_shows_both_nodes_ranks_in_one_job_and_names_the_straggler(
    cluster: Cluster,
) -> None:
    source = PrometheusJobsSource(cluster.prometheus.url, window_s=30)
    state = source.sample()
    assert state.error is None
    assert [job.job_key for job in state.jobs] == [f"run:{RUN_ID}"]
    job = state.jobs[0]
    assert job.name == "train.py"
    assert [(rank.host, rank.rank) for rank in job.ranks] == [("node-a", 0), ("node-b", 1)]
    analysis = analyse(state, None)
    analysed = analysis.jobs[0]
    for rank_analysis in analysed.ranks:
        stats = rank_analysis.stats
        assert stats is not None
        assert abs(stats.data_wait_share - SHARE[rank_analysis.rank.host]) < 0.05
    # Rank 0 waits for data 25 points longer than rank 1, which computes the difference away: waiting
    # for rank 0 in its collectives, as far as the step clock can tell.
    assert analysed.verdict.kind == "straggler", analysed.verdict.headline
    assert analysed.verdict.evidence["straggler_rank"] == 0


def test_once_json_over_prometheus_lists_the_cluster_job(cluster: Cluster) -> None:
    done = subprocess.run(
        [*XFERTOP, "--once", "--json", "--prometheus", cluster.prometheus.url],
        env=child_env(cluster.tmp / "no-rings-here"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert jobs["error"] is None
    [job] = jobs["items"]
    assert job["job_key"] == f"run:{RUN_ID}"
    assert sorted(rank["host"] for rank in job["ranks"]) == ["node-a", "node-b"]
    assert job["verdict"]["kind"] == "straggler"


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    return [
        expr.replace("$__rate_interval", "10s")
        .replace('"$job_id"', f'"run:{RUN_ID}"')
        .replace('"$host"', '".*"')
        for expr in exprs
    ]


def test_every_dashboard_query_runs_and_the_job_panels_have_data(cluster: Cluster) -> None:
    results = {expr: cluster.prometheus.query(expr) for expr in _dashboard_expressions()}
    no_gpu_here = [expr for expr, result in results.items() if not result]
    # This machine has no GPU: only the GPU panels' queries may come back empty.
    assert all("xfertop_gpu_" in expr for expr in no_gpu_here), no_gpu_here
    straggler = next(expr for expr in results if "quantile by (job_id)" in expr and "data_wait" in expr)
    above_median = _by_host(results[straggler])
    assert above_median["node-a"] > 0.05 > above_median["node-b"]


def test_the_rules_load_and_evaluate_without_errors(cluster: Cluster) -> None:
    def healthy_groups() -> list[dict] | None:
        groups = cluster.prometheus.api("rules")["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        evaluated = rules and all(rule.get("lastEvaluation", "").startswith("2") for rule in rules)
        return groups if evaluated and all(rule["health"] == "ok" for rule in rules) else None

    groups = wait_until(healthy_groups, 30.0, "every rule evaluated once, healthy", every_s=0.5)
    assert {group["name"] for group in groups} == {"xfertop-recording", "xfertop-alerts"}
    medians = cluster.prometheus.query("xfertop_job:data_wait:median_share1m")
    assert [series["metric"]["job_id"] for series in medians] == [f"run:{RUN_ID}"]


def test_counters_stay_monotonic_across_an_exporter_restart(cluster: Cluster) -> None:
    before = cluster.exporters["node-b"]
    before_values = _counter_values(before.metrics())
    assert before.stop() == 0
    after = ExporterProcess(before.ring_dir, before.host_label, before.port, before.state_file)
    cluster.exporters["node-b"] = after
    after_values = _counter_values(after.metrics())
    assert set(after_values) == set(before_values)
    for key, value in before_values.items():
        assert after_values[key] >= value, key
    # Prometheus, scraping the restarted exporter, sees no counter reset.
    restarted_at = time.time()  # Prometheus runs on this machine: the same clock

    def scraped_since_restart() -> bool:
        found = cluster.prometheus.query('timestamp(xfertop_rank_steps_total{host="node-b"})')
        return bool(found) and float(found[0]["value"][1]) > restarted_at + 1

    wait_until(scraped_since_restart, 30.0, "two scrapes of the restarted exporter", every_s=0.2)
    for name in sorted({name for name, _labels in before_values}):
        [resets] = cluster.prometheus.query(f'resets({name}{{host="node-b"}}[5m])')
        assert float(resets["value"][1]) == 0, name


_SAMPLE = re.compile(r"^(xfertop_rank_\w+_total)\{(.*)\} (\S+)$")


def _counter_values(text: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            values[(match.group(1), match.group(2))] = float(match.group(3))
    return values


async def test_the_live_view_over_prometheus_shows_the_cluster_job_and_its_straggler(
    cluster: Cluster,
) -> None:
    from ui.live import MessageWaiter
    from xfertop.sources.bundle import Sources
    from xfertop.ui.app import XfertopApp
    from xfertop.ui.jobs_pane import RankTable
    from xfertop.ui.messages import JobsStateUpdated

    jobs = PrometheusJobsSource(cluster.prometheus.url, interval_s=0.5, window_s=30)
    app = XfertopApp(Sources(jobs=jobs))
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        await waiter.wait_for(lambda m: isinstance(m, JobsStateUpdated) and bool(m.state.jobs), 30)
        await pilot.pause()
        assert app.query_one(RankTable).row_count == 2
        verdicts = "\n".join(line.plain for line in app.jobs_pane.verdicts.lines)
        assert verdicts.startswith("train.py: straggler: rank 0"), verdicts
