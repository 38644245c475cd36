"""The host's step in parts: where the loop's own work ends and the model's begins, and syncs.

Marks within one step, on the host clock (``perf_counter_ns``):
- the batch arrives (next() returns): the step's own time starts;
- the step's first work: its first copy or the model's first call (``work_started``): what came
  before it is the loop's own work before the model (``loop_pre``);
- the model's last backward or optimizer step, or its forward where no backward follows
  (``model_ended``): what comes after it is the loop's own work after the step (``loop_post``);
- syncs with the device (``synced``): host time blocked until the GPU catches up.
Copies and syncs are their own parts wherever they happen, so the parts never overlap: ``loop_pre``
and ``loop_post`` leave out the syncs and copies inside them, and the model is what is left.
"""

from __future__ import annotations


class HostParts:
    __slots__ = (
        "_copy_at_model_end",
        "_opened_ns",
        "_sync_at_first_work",
        "_sync_at_model_end",
        "first_work_ns",
        "model_end_ns",
        "sync_ns",
    )

    def __init__(self) -> None:
        self._opened_ns = 0
        self.first_work_ns = 0  # 0: no copy or model call yet in this step
        self.model_end_ns = 0  # 0: the model has not finished a backward or optimizer step yet
        self.sync_ns = 0
        self._sync_at_first_work = 0
        self._sync_at_model_end = 0
        self._copy_at_model_end = 0

    def open(self, opened_ns: int) -> None:
        """The batch arrived at ``opened_ns``: a new step's marks."""
        self._opened_ns = opened_ns
        self.first_work_ns = 0
        self.model_end_ns = 0
        self.sync_ns = 0
        self._sync_at_first_work = 0
        self._sync_at_model_end = 0
        self._copy_at_model_end = 0

    def work_started(self, now_ns: int) -> bool:
        """A copy or a model call begins now; True if it is the step's first work."""
        if self.first_work_ns:
            return False
        self.first_work_ns = now_ns
        self._sync_at_first_work = self.sync_ns
        return True

    def model_ended(self, now_ns: int, copy_cpu_ns: int) -> None:
        """The model finished a backward, optimizer step or forward now (the last one counts)."""
        self.model_end_ns = now_ns
        self._sync_at_model_end = self.sync_ns
        self._copy_at_model_end = copy_cpu_ns

    def synced(self, sync_ns: int) -> None:
        self.sync_ns += sync_ns

    def sync_after_model_ns(self) -> int:
        """Host time blocked in syncs since the model's end."""
        return self.sync_ns - self._sync_at_model_end if self.model_end_ns else 0

    def loop_pre_ns(self) -> int:
        if not self.first_work_ns:
            return 0
        return max(0, self.first_work_ns - self._opened_ns - self._sync_at_first_work)

    def loop_post_ns(self, close_ns: int, copy_cpu_ns: int) -> int:
        if not self.model_end_ns:
            return 0
        after = close_ns - self.model_end_ns
        after -= self.sync_ns - self._sync_at_model_end
        after -= copy_cpu_ns - self._copy_at_model_end
        return max(0, after)
