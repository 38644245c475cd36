"""py-spy's output formats, parsed from output captured on real processes (fixtures/pyspy)."""

from __future__ import annotations

from pyspy_support import FIXTURES, fixture_window
from xfertop.sources.stacks.pyspy_output import parse_dump_json, parse_raw, parse_sample_errors


def test_raw_window_of_a_job_with_workers_names_every_process_and_thread() -> None:
    window = fixture_window("starved_w2")
    root = window.root_pid
    workers = {pid for pid in window.commands if pid != root}
    assert len(workers) == 2
    assert all("train_cpu.py starved --workers 2" in cmd for cmd in window.commands.values())
    main = [s for s in window.stacks if s.pid == root and s.is_main_thread]
    assert main and all(s.thread_name == "MainThread" for s in main)
    assert {s.process_path for s in window.stacks if s.pid in workers} == {(root, w) for w in workers}


def test_raw_frames_are_innermost_first_with_file_and_line() -> None:
    window = fixture_window("starved_w0")
    main = max((s for s in window.stacks if s.is_main_thread), key=lambda s: s.count)
    assert main.frames[-1].name == "<module>"
    assert main.frames[-1].filename.endswith("train_cpu.py")
    assert all(frame.line > 0 for frame in main.frames)
    assert sum(s.count for s in window.stacks if s.is_main_thread) >= 100  # 3 s at 50 Hz


def test_a_command_line_with_a_newline_does_not_split_the_record() -> None:
    stacks, commands = parse_raw((FIXTURES / "multiline_cmdline.raw").read_text())
    assert len(stacks) == 1
    assert stacks[0].count >= 40
    (command,) = commands.values()
    assert command.startswith("python -c import time\nwhile True")
    assert stacks[0].frames[0].name == "<module>" and stacks[0].thread_name is None


def test_a_semicolon_in_the_command_line_stays_in_the_command() -> None:
    text = 'process 7:"python -c a=1;b=2";thread (7): MainThread;<module> (<string>:1) 3\n'
    stacks, commands = parse_raw(text)
    assert commands == {7: "python -c a=1;b=2"}
    assert stacks[0].frames[0].name == "<module>" and stacks[0].count == 3


def test_dump_json_gives_every_thread_with_its_activity() -> None:
    stacks = parse_dump_json((FIXTURES / "starved_w2.dump.json").read_text())
    main = [s for s in stacks if s.is_main_thread]
    assert len(main) == 1
    feeders = [s for s in stacks if s.thread_name == "QueueFeederThread"]
    assert feeders and all(s.active is False for s in feeders)
    assert main[0].frames[-1].name == "<module>"
    assert main[0].frames[0].filename.startswith("/")  # dump gives full paths


def test_sample_errors_are_read_from_pyspys_summary_line() -> None:
    assert parse_sample_errors("py-spy> Wrote raw flamegraph data to 'w'. Samples: 49 Errors: 3") == 3
    assert parse_sample_errors("") == 0
