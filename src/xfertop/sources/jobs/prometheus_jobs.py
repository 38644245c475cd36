"""Training jobs of every node Prometheus scrapes, read through its HTTP API (`xfertop --prometheus URL`).

Publishes the very ``JobsState`` the local jobs source does, so the analysis and the UI run unchanged.
The exporters (`xfertop export`) publish per-rank counters; this source reads their raw samples over the
last ``window_s`` (one range-vector query: each pair of consecutive scrapes is an exact interval, no
extrapolation) and turns each interval into step records holding that interval's per-step means: the
window statistics, shares and verdicts then come out as they would locally. The records' data waits
spread around their mean as the interval's data-wait histogram says (each bucket read as one wait inside
it), so p50/p95 and the few-long-waits rules follow the steps, to the buckets' resolution.

What the local verdict reads beyond the means comes along: the steps that made or marked a copy, the
epoch starts and the steps whose iter(loader) started the workers are flagged on as many records of
their interval, evenly spaced; the worker-start records hold those steps' own wall time and data wait
(the persistent_workers rule weighs that wait), the other records the rest of the interval's, so every
interval's sums and shares are those of its steps. Whether `xfertop run` timed every copy
(``xfertop_rank_copy_timing``), whether the loader is read off the loop's thread and the optimizers step
host memory (``xfertop_rank_loader_off_thread``, ``xfertop_rank_cpu_optimizer``), how a finished rank
ended (``xfertop_rank_end``) and the heartbeat's age now (``HEARTBEAT_QUERY``) come from gauges.

Ranks group into jobs across hosts by the ``job_id`` label: a torchelastic run id or a MASTER_ADDR:PORT
names one job on every node; a parent pid or a pid (``ppid:``/``pid:`` keys) names one only on its own
host, so those keys get ``@host`` appended.
"""

from __future__ import annotations

import itertools
import json
import math
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xfertop import wire
from xfertop.model.jobs import JobsState, JobState, RankEnd, RankState, RankStatus, StepRecord
from xfertop.sources.base import PollingSource

RANK_KEY_LABELS = ("host", "job_id", "pid", "rank")
DATA_WAIT_BUCKET = "xfertop_rank_step_data_wait_seconds_bucket"
COUNTERS_QUERY = '{{__name__=~"xfertop_rank_.+_total|' + DATA_WAIT_BUCKET + '"}}[{window}s]'
GAUGES_QUERY = (
    '{__name__=~"xfertop_rank_(info|end_info|status|debug_switches|copy_timing|loader_off_thread|cpu_optimizer|busy_thread_cpu_cores|loop_blocked_ratio|pinned_host_bytes|dataloader_workers'
    '|heartbeat_age_seconds)"}'
)
#: The heartbeat's age now: its age at the last scrape plus the time since that scrape (a rank that stopped
#: stepping must not look as if it stepped a moment ago for a whole scrape interval).
HEARTBEAT_QUERY = (
    "xfertop_rank_heartbeat_age_seconds + time() - timestamp(xfertop_rank_heartbeat_age_seconds)"
)
#: The host parts' counters (without xfertop_rank_ and _total), in StepRecord's order.
HOST_PART_COUNTERS = ("loop_pre_seconds", "sync_seconds", "loop_post_seconds")
#: Step records made from one scrape interval at most (each then stands for several steps).
RECORDS_PER_INTERVAL = 64
CLUSTER_WIDE_KEYS = ("run:", "master:")
RANK_STATUSES: tuple[RankStatus, ...] = ("live", "stalled", "finished")

Fetch = Callable[[str, float], bytes]


class PrometheusError(Exception):
    """Prometheus could not be asked, or refused the query; the message is a sentence."""


def _fetch(url: str, timeout_s: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read()


def check_url(url: str) -> str:
    """The base URL without a trailing slash; ValueError (a sentence) for one that is not http(s)."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(
            f"--prometheus wants Prometheus's base URL, e.g. http://localhost:9090 (got {url!r})"
        )
    return url.rstrip("/")


@dataclass(frozen=True)
class _Series:
    labels: dict[str, str]
    samples: list[tuple[float, float]]


def job_key_of(job_id: str, host: str) -> str:
    """The job's key across nodes: node-local keys (a parent pid, a pid) get their host appended."""
    return job_id if job_id.startswith(CLUSTER_WIDE_KEYS) else f"{job_id}@{host}"


class PrometheusJobsSource(PollingSource[JobsState]):
    """Reads the xfertop_rank_* series of every exporter Prometheus scrapes, every ``interval_s``."""

    name = "prometheus-jobs"

    def __init__(
        self,
        url: str,
        interval_s: float = 2.0,
        window_s: float = 60.0,
        timeout_s: float = 5.0,
        fetch: Fetch = _fetch,
    ) -> None:
        super().__init__(interval_s)
        self.url = check_url(url)
        self.window_s = window_s
        self.timeout_s = timeout_s
        self._fetch = fetch

    def sample(self) -> JobsState:
        now = time.time()
        try:
            counters = self._query(COUNTERS_QUERY.format(window=int(self.window_s)), now)
            gauges = self._query(GAUGES_QUERY, now)
            heartbeats = self._query(HEARTBEAT_QUERY, now)
        except PrometheusError as exc:
            return JobsState(now, (), self.url, error=str(exc))
        return JobsState(now, _jobs(counters, gauges, heartbeats), self.url)

    def _query(self, query: str, at: float) -> list[_Series]:
        address = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"})
        try:
            body = self._fetch(address, self.timeout_s)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(
                f"Prometheus at {self.url} refused the query: {_api_error(exc.read())}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {reason}") from None
        try:
            document = json.loads(body)
            data = document["data"]
            result = data["result"]
        except (ValueError, KeyError, TypeError):
            raise PrometheusError(f"{self.url} did not answer like Prometheus's HTTP API") from None
        if data.get("resultType") == "matrix":
            return [
                _Series(item["metric"], [(float(t), float(v)) for t, v in item["values"]]) for item in result
            ]
        return [
            _Series(item["metric"], [(float(item["value"][0]), float(item["value"][1]))]) for item in result
        ]


def _api_error(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")


def _rank_key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in RANK_KEY_LABELS)


def _optional_int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def _jobs(
    counters: list[_Series], gauges: list[_Series], heartbeats: Sequence[_Series] = ()
) -> tuple[JobState, ...]:
    by_rank: dict[tuple[str, ...], dict[str, _Series]] = {}
    for series in counters:
        name = series.labels.get("__name__", "")
        if name == DATA_WAIT_BUCKET:
            name = f"{name}:{series.labels.get('le', '')}"  # one series per bucket
        by_rank.setdefault(_rank_key(series.labels), {})[name] = series
    facts: dict[tuple[str, ...], dict[str, Any]] = {}
    for series in gauges:
        _note_gauge(facts.setdefault(_rank_key(series.labels), {}), series)
    for series in heartbeats:
        facts.setdefault(_rank_key(series.labels), {})["heartbeat"] = max(0.0, series.samples[-1][1])
    ranks = [_rank_state(series, facts.get(key, {})) for key, series in by_rank.items()]
    by_job: dict[str, list[RankState]] = {}
    names: dict[str, str] = {}
    for rank, job_name in (found for found in ranks if found is not None):
        by_job.setdefault(rank.job_key, []).append(rank)
        names.setdefault(rank.job_key, job_name)
    jobs = []
    for key in sorted(by_job):
        members = sorted(by_job[key], key=lambda r: (r.rank is None, r.rank or 0, r.host, r.pid))
        jobs.append(JobState(job_key=key, name=names[key], ranks=tuple(members)))
    return tuple(jobs)


#: 0/1 gauges of the rank's state word, by the RankState field each sets.
_FLAG_GAUGES = {
    "xfertop_rank_copy_timing": "copy_timing",
    "xfertop_rank_loader_off_thread": "loader_off_thread",
    "xfertop_rank_cpu_optimizer": "cpu_optimizer",
}


def _note_gauge(facts: dict[str, Any], series: _Series) -> None:
    labels, value = series.labels, series.samples[-1][1]
    name = labels.get("__name__", "")
    if name == "xfertop_rank_status" and value == 1:
        facts["status"] = labels.get("xfertop_rank_status")
    elif name == "xfertop_rank_info":
        facts["device"] = labels.get("device", "")
        facts["world_size"] = _optional_int(labels.get("world_size"))
    elif name == "xfertop_rank_end_info":
        facts["end"] = rank_end_of(labels)
    elif name == "xfertop_rank_debug_switches" and value == 1:
        facts.setdefault("debug_switches", set()).add(labels.get("xfertop_rank_debug_switches"))
    elif name in _FLAG_GAUGES:
        facts[_FLAG_GAUGES[name]] = value == 1
    elif name == "xfertop_rank_busy_thread_cpu_cores":
        facts["busy_thread"] = (labels.get("thread", ""), value)
    elif name == "xfertop_rank_loop_blocked_ratio":
        facts[f"loop_blocked_{labels.get('part', '')}"] = value
    elif name == "xfertop_rank_pinned_host_bytes":
        facts["pinned"] = int(value)
    elif name == "xfertop_rank_dataloader_workers":
        facts["workers"] = int(value)
    elif name == "xfertop_rank_heartbeat_age_seconds":
        facts["heartbeat"] = value


def _signal_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    try:
        return int(signal.Signals[text])
    except KeyError:
        return None


def rank_end_of(labels: dict[str, str]) -> RankEnd:
    """The ``RankEnd`` that ``xfertop_rank_end``'s labels describe."""
    return RankEnd(
        closed_ring=labels.get("closed_ring") == "true",
        exit_code=_optional_int(labels.get("exit_code")),
        signal=_signal_number(labels.get("signal", "")) if labels.get("signal") else None,
    )


def _rank_state(series: dict[str, _Series], facts: dict[str, Any]) -> tuple[RankState, str] | None:
    steps_series = series.get("xfertop_rank_steps_total")
    if steps_series is None:
        return None
    labels = steps_series.labels
    host, job_id, job_name = labels.get("host", ""), labels.get("job_id", ""), labels.get("job_name", "?")
    pid = _optional_int(labels.get("pid")) or 0
    status: RankStatus = facts.get("status") if facts.get("status") in RANK_STATUSES else "live"  # type: ignore[assignment]
    unseen = series.get("xfertop_rank_steps_unseen_total")
    rank = RankState(
        pid=pid,
        host=host,
        rank=_optional_int(labels.get("rank")),
        local_rank=_optional_int(labels.get("local_rank")),
        world_size=facts.get("world_size"),
        job_key=job_key_of(job_id, host),
        device=facts.get("device", ""),
        argv=tuple(job_name.split(" ")),
        status=status,
        heartbeat_age_s=facts.get("heartbeat", 0.0),
        steps=step_records(series),
        pinned_host_bytes=facts.get("pinned"),
        dataloader_workers=facts.get("workers"),
        reporter_errors=0,
        reporter_disabled=False,
        ring_path=f"prometheus:{host}/{job_id}/pid{pid}/rank{labels.get('rank', '')}",
        steps_lost=int(unseen.samples[-1][1]) if unseen is not None and unseen.samples else 0,
        copy_timing=facts.get("copy_timing", False),
        loader_off_thread=facts.get("loader_off_thread", False),
        cpu_optimizer=facts.get("cpu_optimizer", False),
        busy_thread=facts.get("busy_thread", ("", 0.0))[0],
        busy_thread_share=facts.get("busy_thread", ("", 0.0))[1],
        loop_pre_blocked_share=facts.get("loop_blocked_before_model"),
        loop_post_blocked_share=facts.get("loop_blocked_after_step"),
        debug_switches=tuple(n for n in wire.DEBUG_SWITCHES.values() if n in facts.get("debug_switches", ())),
        # An exporter older than xfertop_rank_end says only that the rank finished.
        end=facts.get("end", RankEnd(closed_ring=True)) if status == "finished" else None,
    )
    return rank, job_name


def _increase(values: dict[float, float] | None, start: float, end: float) -> float:
    """A counter's increase from its sample at ``start`` to the one at ``end`` (after a reset: from 0)."""
    if values is None:
        return 0.0
    before, after = values.get(start), values.get(end)
    if before is None or after is None:
        return 0.0
    return after - before if after >= before else after


def step_records(series: dict[str, _Series]) -> tuple[StepRecord, ...]:
    """Step records from consecutive scrapes of one rank's counters, oldest first (see the module doc)."""
    samples = series["xfertop_rank_steps_total"].samples
    values = {name: dict(found.samples) for name, found in series.items()}
    buckets = _bucket_bounds(series)
    records: list[StepRecord] = []
    for (start, _), (end, steps_after) in itertools.pairwise(samples):

        def delta(name: str, start: float = start, end: float = end) -> float:
            return _increase(values.get(f"xfertop_rank_{name}_total"), start, end)

        counted = delta("steps") - delta("steps_unseen")
        if counted < 1:
            continue
        counts = [round(_increase(values.get(name), start, end)) for _bound, name in buckets]
        wait_buckets = _wait_buckets([bound for bound, _name in buckets], counts, int(counted))
        interval = _interval_records(delta, int(counted), int(steps_after) - 1, wait_buckets)
        firsts = sum(record.epoch_start for record in interval)
        # The time between a loader's iterations, before each iteration's first record (no start times
        # here to measure it from); records stand for counted / len(interval) steps each, so it is scaled
        # as their walls are.
        between_ms = delta("between_iterations_seconds") * 1000 * len(interval) / counted
        if firsts and between_ms > 0:
            interval = [
                replace(r, between_before_ms=between_ms / firsts) if r.epoch_start else r for r in interval
            ]
        records.extend(interval)
    return tuple(records)


def _bucket_bounds(series: dict[str, _Series]) -> list[tuple[float, str]]:
    """The data wait histogram's buckets the rank has: (upper bound in seconds, series key), ascending."""
    found = []
    for name in series:
        prefix, sep, bound = name.partition(":")
        if sep and prefix == DATA_WAIT_BUCKET:
            try:
                found.append((float(bound), name))
            except ValueError:
                continue
    return sorted(found)


def _wait_buckets(
    bounds_s: list[float], cumulative: list[int], counted: int
) -> list[tuple[float, int]] | None:
    """(a representative data wait in ms, steps) per bucket of one interval, from the cumulative bucket
    increases; None where the histogram is absent (an older exporter) or does not hold the interval's
    steps."""
    if not bounds_s or bounds_s[-1] != math.inf or cumulative[-1] != counted:
        return None
    buckets = []
    lower_s, below = 0.0, 0
    for upper_s, up_to in zip(bounds_s, cumulative, strict=True):
        if up_to < below:
            return None
        if upper_s == math.inf:
            typical_s = 2 * lower_s
        elif lower_s == 0:
            typical_s = upper_s / 2
        else:
            typical_s = math.sqrt(lower_s * upper_s)
        buckets.append((typical_s * 1000, up_to - below))
        lower_s, below = upper_s, up_to
    return buckets


def wait_factors(buckets: list[tuple[float, int]], steps: int, records: int) -> list[float]:
    """How ``records`` records of the ``steps`` shortest-waiting steps spread their mean wait: each
    record's wait over the mean, ascending, from the quantiles of the buckets' representative waits."""
    values = []
    below = 0
    bucket = iter(buckets)
    typical_ms, count = next(bucket)
    for index in range(records):
        position = (index + 0.5) * steps / records
        while below + count <= position:
            below += count
            typical_ms, count = next(bucket)
        values.append(typical_ms)
    mean = sum(values) / len(values)
    return [value / mean for value in values]


def _spread_order(count: int) -> list[int]:
    """A permutation of range(count) that spreads neighbours apart (a stride coprime to count): ascending
    waits are laid over an interval's records without piling the long ones at one end."""
    stride = max(1, round(count * 0.618))
    while math.gcd(stride, count) != 1:
        stride += 1
    return [index * stride % count for index in range(count)]


def spread_indices(flagged: int, count: int) -> list[int]:
    """``flagged`` of ``count`` positions, evenly spaced (the flagged steps of an interval, such as
    epoch starts, fall anywhere in it: none is put at its start or its end on purpose)."""
    flagged = min(flagged, count)
    return [int((index + 0.5) * count / flagged) for index in range(flagged)]


@dataclass(frozen=True)
class _Flags:
    """Which records of an interval carry each flag (record indices)."""

    epoch_start: frozenset[int]
    worker_start: frozenset[int]
    copied: frozenset[int]
    pinned: frozenset[int]
    non_blocking: frozenset[int]
    synced: frozenset[int]
    optimizer_stepped: frozenset[int]


def _interval_flags(delta: Callable[[str], float], counted: int, count: int) -> _Flags:
    """One record per flagged step, as many as there are records at most; a worker start is an epoch
    start too. Pinned and non_blocking are shares of the copying steps."""
    worker_starts = min(round(delta("worker_start_steps")), counted)
    epoch_starts = min(max(round(delta("epoch_start_steps")), worker_starts), counted)
    epoch = spread_indices(epoch_starts, count)
    worker_start = [epoch[i] for i in spread_indices(min(worker_starts, count), len(epoch))]
    copying = delta("copying_steps")

    def of_copying(name: str) -> frozenset[int]:
        return frozenset(spread_indices(round(count * delta(name) / copying), count) if copying > 0 else ())

    return _Flags(
        epoch_start=frozenset(epoch),
        worker_start=frozenset(worker_start),
        # One record at least where some step copied: "copies were looked at" must not round away.
        copied=_spread_share(delta("copied_steps"), counted, count, at_least_one=True),
        pinned=of_copying("pinned_steps"),
        non_blocking=of_copying("pageable_non_blocking_steps"),
        synced=_spread_share(delta("synced_steps"), counted, count),
        # One record at least where an optimizer stepped (every eighth step under accumulation): the rules
        # ask whether one did. An exporter older than the counter reads none: they hedge, as for a job
        # without torch.optim.
        optimizer_stepped=_spread_share(delta("optimizer_stepped_steps"), counted, count, at_least_one=True),
    )


def _spread_share(flagged: float, counted: int, count: int, at_least_one: bool = False) -> frozenset[int]:
    """The records that carry a flag whose share of steps the rules compare with a bar: the same share of
    the ``count`` records, spread over them (not a majority vote)."""
    records = round(count * min(flagged, counted) / counted)
    return frozenset(spread_indices(max(records, int(at_least_one and flagged > 0)), count))


def _split_ms(
    total_s: float, of_worker_starts_s: float, counted: int, worker_starts: int, start_records: int
) -> tuple[float, float]:
    """(ms of a worker-start record, ms of another record) for an interval's total: the worker-start
    records stand for every step that started workers (and, in an interval of more steps than records,
    for their share of the other steps), so the interval's sums and shares hold."""
    if not start_records:
        return 0.0, total_s * 1000 / counted
    others = counted - worker_starts
    other_ms = max(0.0, total_s - of_worker_starts_s) * 1000 / others if others else 0.0
    group_steps = start_records * counted / min(counted, RECORDS_PER_INTERVAL)
    start_ms = (of_worker_starts_s * 1000 + (group_steps - worker_starts) * other_ms) / group_steps
    return start_ms, other_ms


def _wait_factors_by_record(
    wait_buckets: list[tuple[float, int]] | None, steps: int, others: list[int]
) -> dict[int, float]:
    """Each non-worker-start record's wait over their mean: as the histogram spreads the waits of those
    steps (the worker starts taken to be the longest waits), laid over the records spread apart; 1.0
    for every record without a histogram."""
    factor = dict.fromkeys(others, 1.0)
    if wait_buckets is not None and others:
        factors = wait_factors(wait_buckets, steps, len(others))
        for order, position in enumerate(_spread_order(len(others))):
            factor[others[position]] = factors[order]
    return factor


def _interval_records(
    delta: Callable[[str], float],
    counted: int,
    last_step: int,
    wait_buckets: list[tuple[float, int]] | None = None,
) -> list[StepRecord]:
    count = min(counted, RECORDS_PER_INTERVAL)
    flags = _interval_flags(delta, counted, count)
    worker_starts = min(round(delta("worker_start_steps")), counted)
    starts = (counted, worker_starts, len(flags.worker_start))
    start_wall_ms, other_wall_ms = _split_ms(
        delta("step_seconds"), delta("worker_start_step_seconds"), *starts
    )
    start_wait_ms, other_wait_ms = _split_ms(
        delta("data_wait_seconds"), delta("worker_start_data_wait_seconds"), *starts
    )
    others = [index for index in range(count) if index not in flags.worker_start]
    factor = _wait_factors_by_record(wait_buckets, counted - worker_starts, others)
    timed_wall_s = delta("gpu_timed_step_seconds")
    gpu_timed = delta("gpu_timed_steps") > 0 and timed_wall_s > 0
    gap_share = delta("gpu_gap_seconds") / timed_wall_s if gpu_timed else 0.0
    start_gap_ms = gap_share * start_wall_ms if gpu_timed else None
    other_gap_ms = gap_share * other_wall_ms if gpu_timed else None
    copy_cpu_ms = delta("copy_cpu_seconds") * 1000 / counted
    loop_pre_ms, sync_ms, loop_post_ms = (delta(name) * 1000 / counted for name in HOST_PART_COUNTERS)
    partitioned = delta("partitioned_steps") * 2 > counted
    h2d_bytes = round(delta("h2d_bytes") / counted)
    samples = round(delta("samples") / counted)
    records = []
    for index in range(count):
        worker_start = index in flags.worker_start
        if worker_start:
            wall_ms, wait_ms, gap_ms = start_wall_ms, start_wait_ms, start_gap_ms
        else:
            wait_ms = other_wait_ms * factor[index]
            # A record's wall moves with its wait: the rest of its step is its group's mean.
            wall_ms = max(wait_ms, other_wall_ms + wait_ms - other_wait_ms)
            gap_ms = other_gap_ms
        records.append(
            StepRecord(
                step=last_step - round((count - 1 - index) * counted / count),
                wall_ms=wall_ms,
                data_wait_ms=wait_ms,
                copy_cpu_ms=copy_cpu_ms,
                loop_pre_ms=loop_pre_ms,
                sync_ms=sync_ms,
                loop_post_ms=loop_post_ms,
                gpu_gap_ms=gap_ms,
                h2d_bytes=h2d_bytes,
                samples=samples,
                pinned=index in flags.pinned,
                pageable_non_blocking=index in flags.non_blocking,
                copied=index in flags.copied,
                epoch_start=index in flags.epoch_start,
                workers_started=worker_start,
                partitioned=partitioned,
                synced=index in flags.synced,
                optimizer_stepped=index in flags.optimizer_stepped,
            )
        )
    return records
