"""Record and replay: real snapshots of a real CPU training job written to a recording and read back as
the very model objects; the published JSON Schema holds every line; rotation bounds the size; a damaged
or truncated recording is one clear line."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from fakes.fake_pynvml import FakePynvml
from ring_test_tools import child_env, wait_until
from xfertop.analysis.verdict import job_verdict
from xfertop.export.recording import (
    KEY_EVERY,
    RecordingWriter,
    Snapshot,
    read_recording,
    recording_schema,
)
from xfertop.launch.demo import DemoJob, start_demo_job
from xfertop.model.plain import from_plain, to_plain
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.sources.topology.source import TopologySource

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "recording.schema.json"
TRAIN = """
import time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, index):
        time.sleep(0.002)
        return torch.ones(4)

for batch in DataLoader(Slow(), batch_size=2):
    pass
"""


@pytest.fixture
def demo_job(tmp_path: Path) -> Iterator[DemoJob]:
    job = start_demo_job(ring_dir=tmp_path / "rings", phase_seconds=60.0, device="cpu")
    try:
        yield job
    finally:
        job.stop()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def _real_snapshots(ring_dir: Path, count: int) -> list[Snapshot]:
    """``count`` snapshots of real sources, read as the live view reads them (only NVML is faked)."""
    gpu = GpuSource(api=NvmlApi(lib=FakePynvml.h200s(2)), first_window_s=0.0)
    host, jobs, topology = HostSource(), JobsSource(ring_dir=str(ring_dir)), TopologySource()
    wait_until(
        lambda: any(job.ranks[0].steps for job in jobs.sample_once().jobs), 120, "the job's first steps"
    )
    snapshots = []
    try:
        topology_state = topology.sample_once()
        for index in range(count):
            # The topology and (every other frame) the host unchanged: frames leave unchanged parts out.
            host_state = host.latest() if index % 2 and host.latest() else host.sample_once()
            snapshots.append(
                Snapshot(time.time(), gpu.sample_once(), host_state, jobs.sample_once(), topology_state)
            )
            time.sleep(0.05)  # a few steps between frames: the deltas carry new and resolved steps
    finally:
        for source in (gpu, host, jobs, topology):
            source.close()
    return snapshots


def test_a_recording_of_a_real_job_reads_back_as_the_very_snapshots(
    demo_job: DemoJob, tmp_path: Path
) -> None:
    recorded = _real_snapshots(demo_job.ring_dir, KEY_EVERY + 12)  # past a second key frame
    path = tmp_path / "run.jsonl.gz"
    writer = RecordingWriter(str(path), interval_s=0.05)
    for snapshot in recorded:
        writer.write(snapshot)
    writer.close()
    replayed = read_recording(str(path)).frames
    assert len(replayed) == len(recorded)
    for index, (before, after) in enumerate(zip(recorded, replayed, strict=True)):
        assert after == before, f"frame {index} differs"
    steps = [len(snapshot.jobs.jobs[0].ranks[0].steps) for snapshot in replayed if snapshot.jobs]
    assert steps[-1] > steps[0] > 0  # the job stepped while it was recorded
    # Deltas keep it small: the newest frame's steps are not all written again in every frame.
    lines = _lines(path)
    delta = lines[2]["jobs"]["jobs"][0]["ranks"][0]
    assert not delta["steps_reset"] and len(delta["steps"]) < delta["steps_count"]
    assert "topology" not in lines[2]  # unchanged: left out


def test_every_line_of_a_real_recording_fits_the_published_schema(demo_job: DemoJob, tmp_path: Path) -> None:
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == recording_schema(), "docs/recording.schema.json is stale: write it out again"
    path = tmp_path / "run.jsonl.gz"
    writer = RecordingWriter(str(path), interval_s=0.05)
    for snapshot in _real_snapshots(demo_job.ring_dir, 4):
        writer.write(snapshot)
    writer.close()
    validator = jsonschema.Draft202012Validator(published)
    lines = _lines(path)
    assert [line["kind"] for line in lines] == ["header"] + ["frame"] * 4
    for line in lines:
        validator.validate(line)
    broken = json.loads(json.dumps(lines[1]))
    broken["jobs"]["jobs"][0]["ranks"][0]["status"] = "sleeping"
    assert not validator.is_valid(broken)  # the schema can fail


def test_the_record_cli_records_a_job_under_xfertop_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    env = child_env(tmp_path / "rings")
    job = subprocess.Popen(
        [sys.executable, "-m", "xfertop", "run", "--no-summary", "--", sys.executable, str(script)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: any(
                job.ranks[0].steps for job in JobsSource(ring_dir=str(tmp_path / "rings")).sample_once().jobs
            ),
            120,
            "the job's first steps",
        )
        path = tmp_path / "run.jsonl.gz"
        done = subprocess.run(
            [sys.executable, "-m", "xfertop", "record", str(path), "--interval", "0.25", "--duration", "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        job.kill()
        job.wait()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("xfertop record: ") and "frames written to" in done.stdout
    frames = read_recording(str(path)).frames
    assert len(frames) >= 6
    ranks = [snapshot.jobs.jobs[0].ranks[0] for snapshot in frames if snapshot.jobs and snapshot.jobs.jobs]
    assert ranks and ranks[-1].steps[-1].step > ranks[0].steps[-1].step  # it stepped while recorded
    assert ranks[-1].argv[-1] == str(script)


def test_rotation_bounds_the_files_and_each_file_replays_alone(demo_job: DemoJob, tmp_path: Path) -> None:
    snapshots = _real_snapshots(demo_job.ring_dir, 3)
    path = tmp_path / "run.jsonl.gz"
    writer = RecordingWriter(str(path), interval_s=0.05, max_bytes=64 * 1024, keep=2)
    index = 0
    while writer.files_rotated < 3 and index < 200_000:
        writer.write(snapshots[index % 3])
        index += 1
    writer.close()
    files = sorted(name for name in os.listdir(tmp_path) if name.startswith("run.jsonl.gz"))
    assert files == ["run.jsonl.gz", "run.jsonl.gz.1", "run.jsonl.gz.2"]  # the oldest one was removed
    for name in files:
        assert (tmp_path / name).stat().st_size < 64 * 1024 + 16 * 1024  # at most one frame over
        frames = read_recording(str(tmp_path / name)).frames
        assert frames and all(frame in snapshots for frame in frames)


def _replay(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xfertop", "replay", str(path), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _a_recording(tmp_path: Path, frames: int = 5) -> Path:
    path = tmp_path / "good.jsonl.gz"
    writer = RecordingWriter(str(path), interval_s=1.0)
    for index in range(frames):
        writer.write(Snapshot(time=1000.0 + index))
    writer.close()
    return path


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("missing", "no such file"),
        ("not gzip", "is not an xfertop recording (not gzip-compressed)"),
        ("not json", "line 2 is not JSON"),
        ("not a recording", "is not an xfertop recording (no recording header"),
        ("future version", "format xfertop.recording/9, which this xfertop does not read"),
        ("truncated", "is truncated after"),
        ("wrong shape", "does not fit the snapshot model"),
        ("corrupt bytes", "is damaged"),
    ],
)
def test_a_damaged_recording_is_one_clear_line(tmp_path: Path, damage: str, expected: str) -> None:
    good = _a_recording(tmp_path)
    path = tmp_path / "bad.jsonl.gz"
    lines = gzip.decompress(good.read_bytes()).splitlines(keepends=True)
    if damage == "not gzip":
        path.write_bytes(b"hello, this is plain text\n")
    elif damage == "not json":
        path.write_bytes(gzip.compress(lines[0] + b"{not json\n"))
    elif damage == "not a recording":
        path.write_bytes(gzip.compress(b'{"some": "json"}\n'))
    elif damage == "future version":
        path.write_bytes(gzip.compress(lines[0].replace(b"recording/2", b"recording/9") + lines[1]))
    elif damage == "truncated":
        path.write_bytes(good.read_bytes()[:-20])  # the end of the stream is gone
    elif damage == "wrong shape":
        path.write_bytes(
            gzip.compress(
                lines[0] + b'{"kind":"frame","index":0,"time":1,"key":true,'
                b'"gpu":{"timestamp":"noon"},"host":null,"jobs":null,"topology":null}\n'
            )
        )
    elif damage == "corrupt bytes":
        data = bytearray(good.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8
        path.write_bytes(bytes(data))
    result = _replay(path)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("xfertop replay: ") and expected in result.stderr, result.stderr


def test_a_recording_cut_before_its_first_frame_does_not_suggest_partial(tmp_path: Path) -> None:
    good = _a_recording(tmp_path, frames=1)
    header = gzip.decompress(good.read_bytes()).splitlines(keepends=True)[0]
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(header)[:-8])  # the header, then the stream ends mid-member
    result = _replay(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "truncated before its first frame" in result.stderr and "--partial" not in result.stderr


def test_a_recording_cut_after_one_frame_says_one_frame(tmp_path: Path) -> None:
    good = _a_recording(tmp_path, frames=2)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(good.read_bytes()[:-20])
    result = _replay(path)
    assert "truncated after 1 frame (" in result.stderr and "shows that frame" in result.stderr, result.stderr


def _v1_step(n: int) -> dict[str, object]:
    """A step as xfertop.recording/1 wrote it: event intervals, no host parts beyond wait and copy."""
    return {
        "step": n, "wall_ms": 20.0, "data_wait_ms": 15.0, "copy_cpu_ms": 0.5, "copy_gpu_ms": 0.4,
        "compute_gpu_ms": 4.0, "gpu_idle_ms": 15.0, "h2d_bytes": 1 << 20, "samples": 32, "pinned": True,
        "pageable_non_blocking": False, "start_monotonic_ns": 0, "copied": True, "epoch_start": False,
        "workers_started": False, "checkpoint": False,
    }  # fmt: skip


def test_a_recording_of_format_1_replays_without_its_event_intervals(tmp_path: Path) -> None:
    """Format /1 (before ring v2) kept event intervals, not the GPU's own idle: they are dropped, the
    steps replay on the host's clock, and the verdict comes from the data wait."""
    rank = {
        "pid": 4000, "host": "node0", "rank": 0, "local_rank": 0, "world_size": 1, "job_key": "run:x",
        "device": "cuda:0", "argv": ["train.py"], "status": "live", "heartbeat_age_s": 0.1,
        "steps": [_v1_step(n) for n in range(30)], "pinned_host_bytes": None, "dataloader_workers": 2,
        "reporter_errors": 0, "reporter_disabled": False, "ring_path": "/tmp/x/0.ring",
        "steps_reset": True, "steps_first": 0, "steps_count": 30,
    }  # fmt: skip
    header = {"kind": "header", "schema": "xfertop.recording/1", "created_unix_s": 1.0, "host": "node0"}
    frame = {
        "kind": "frame", "index": 0, "time": 1000.0, "key": True, "gpu": None, "host": None,
        "topology": None, "jobs": {"timestamp": 1000.0, "ring_dir": "/tmp/x",
                                   "jobs": [{"job_key": "run:x", "name": "train.py", "ranks": [rank]}]},
    }  # fmt: skip
    path = tmp_path / "v1.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(header) + "\n" + json.dumps(frame) + "\n").encode()))
    (snapshot,) = read_recording(str(path)).frames
    assert snapshot.jobs is not None
    steps = snapshot.jobs.jobs[0].ranks[0].steps
    assert len(steps) == 30 and all(s.gpu_gap_ms is None and s.loop_pre_ms == 0.0 for s in steps)
    assert steps[0].data_wait_ms == 15.0 and not steps[0].partitioned
    assert job_verdict(snapshot.jobs.jobs[0].ranks).kind == "input-bound"


def test_a_truncated_recording_replays_its_frames_with_partial(tmp_path: Path) -> None:
    good = _a_recording(tmp_path, frames=5)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(good.read_bytes()[:-20])
    frames = read_recording(str(path), partial=True).frames
    assert [frame.time for frame in frames] == [1000.0 + index for index in range(len(frames))]
    assert len(frames) >= 4


def test_from_plain_rebuilds_nested_models_and_names_what_does_not_fit() -> None:
    snapshot = Snapshot(time=1.0)
    assert from_plain(Snapshot, to_plain(snapshot)) == snapshot
    with pytest.raises(ValueError, match=r"Snapshot.time: expected float, got str"):
        from_plain(Snapshot, {"time": "noon"})
