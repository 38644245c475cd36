"""What a person reads: the table, the chart, the Markdown record and where records go."""

from __future__ import annotations

from pathlib import Path

import pytest

from xfertop.bench.protocol import run_from_json
from xfertop.bench.report import human_table, markdown_report, records_dir, save_record, sweep_chart

from .builders import make_run


def test_human_table_shows_rows_verdicts_and_the_outcome() -> None:
    text = human_table(make_run())
    assert "GPU 0 link under load: Gen5 x16" in text
    assert "pinned H2D non_blocking" in text and "55 GB/s" in text
    assert "PASS  pinned H2D 256 MiB: 55.0 GB/s = 0.87 of Gen5 x16 63.0 GB/s" in text
    assert "skipped: one GPU visible" in text
    assert text.rstrip().endswith("overall: PASS (exit 0) in 12.5 s")


def test_sweep_chart_bars_scale_with_bandwidth() -> None:
    lines = sweep_chart(make_run()).splitlines()
    bars = {line.split()[2] + line.split()[3]: line.count("#") for line in lines[1:]}
    assert bars["1MiB"] < bars["16MiB"] <= bars["256MiB"] == 40


def test_markdown_report_has_machine_facts_verdicts_cases_and_thresholds() -> None:
    md = markdown_report(make_run())
    assert md.startswith("# xfertop check: PASS")
    for needle in (
        "| driver | 580.159.04 |",
        "| torch | 2.11.0+cu130 |",
        "Gen5 x16; slot max Gen5 x16",
        "## Verdicts",
        "## pinned_nb:",
        "## Sweep chart",
        "| pass_ratio | 0.82 |",
    ):
        assert needle in md


def test_records_folder_honours_xfertop_records(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XFERTOP_RECORDS", str(tmp_path / "recs"))
    assert records_dir() == tmp_path / "recs"
    monkeypatch.delenv("XFERTOP_RECORDS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert records_dir() == tmp_path / "data" / "xfertop" / "records"


def test_save_record_writes_json_and_markdown(tmp_path: Path) -> None:
    run = make_run()
    json_path, md_path = save_record(run, tmp_path / "new")
    assert json_path.name == "check-h200-box-20261129T180000.json"
    assert run_from_json(json_path.read_text()) == run
    assert md_path.read_text() == markdown_report(run)
