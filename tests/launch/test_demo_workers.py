"""The demo's fixed phase never sizes its workers past the cores it may use (the viewer's own advice says
more make it worse), and still keeps the loop fed: storage reads ahead when the capped workers could
not keep up with the starved phase's load time."""

from __future__ import annotations

from xfertop.launch.demo_job import (
    FIXED_DELIVERY_OVER_COMPUTE,
    MAX_FIXED_WORKERS,
    fixed_load_ms,
    worker_count,
)


def test_workers_are_capped_at_the_cores_and_at_least_two() -> None:
    assert worker_count(load_ms=60.0, compute_ms=20.0, cores=16) == 8  # 60 / 7 = 8.6: 9, capped at 8
    assert worker_count(load_ms=600.0, compute_ms=20.0, cores=16) == MAX_FIXED_WORKERS
    assert worker_count(load_ms=600.0, compute_ms=20.0, cores=2) == 2
    assert worker_count(load_ms=600.0, compute_ms=20.0, cores=1) == 2


def test_capped_workers_still_deliver_a_batch_in_time() -> None:
    workers = worker_count(load_ms=60.0, compute_ms=20.0, cores=2)
    load_ms = fixed_load_ms(60.0, 20.0, workers)
    assert load_ms < 60.0
    # Together the workers deliver a batch every load_ms / workers: within the fixed phase's budget.
    assert load_ms / workers <= 20.0 * FIXED_DELIVERY_OVER_COMPUTE + 1e-9
    assert fixed_load_ms(10.0, 20.0, 8) == 10.0, "workers that keep up: the load time is left as it is"
