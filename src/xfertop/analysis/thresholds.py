"""Every number the verdict rules compare against, in one place. docs/verdicts.md gives the reasons.

Shares are fractions of step wall time (0.25 = a quarter of each step). TraceML's published step-time
thresholds (input and H2D: warn at 10%, critical at 20%; at least 20 steps for a confident diagnosis)
are the starting point; see docs/verdicts.md for the sources and where we depart from them.
"""

from __future__ import annotations

#: Steps whose index is below this are ignored: first-step allocation, cudnn autotuning, worker
#: start-up and torch.compile make them unrepresentative.
WARMUP_STEPS = 5
#: Fewer usable steps than this and the verdict is "warming-up" (TraceML: 20 for a confident diagnosis).
MIN_WINDOW_STEPS = 20
#: The rolling window: the most recent this-many usable steps (a change shows within ~50 steps).
WINDOW_STEPS = 50
#: Work the loop does every N steps (a validation pass, a checkpoint) is judged over whole periods of it,
#: so the window holds as many of its steps whatever its phase; at most this many steps, beyond which such
#: work is a phase of its own (the steps in which it runs), not a cost spread over each step.
PERIODIC_WINDOW_MAX_STEPS = 400
#: A first verdict, marked "early", from this many usable steps on, so that one comes within 5 s of the
#: first step, or within 20 steps where steps are slow (WARMUP_STEPS + EARLY_MIN_STEPS = 10 steps).
EARLY_MIN_STEPS = 5

#: GPU idle gap (or, without GPU timing, CPU data wait) as a share of the step.
INPUT_WARN_SHARE = 0.10
INPUT_CRITICAL_SHARE = 0.20

#: Host-to-device copy as a share of the step.
COPY_WARN_SHARE = 0.10
COPY_CRITICAL_SHARE = 0.20

#: Compute at or above this share of the step: the input pipeline keeps up.
COMPUTE_BOUND_SHARE = 0.90

#: GPU busy (copy + compute) below this share of the step, with no idle gap to explain it: the host
#: holds the GPU back (syncs such as .item()). Critical below the second value.
SYNC_GPU_BUSY_WARN_SHARE = 0.70
SYNC_GPU_BUSY_CRITICAL_SHARE = 0.50

#: A CPU data wait at least this large that the GPU did not feel (idle gap below INPUT_WARN_SHARE)
#: is called out as "hidden by queued GPU work, not starvation".
HIDDEN_WAIT_MIN_SHARE = 0.10

#: Copies below this share of the step: tuning PCIe (pinning, link width) cannot buy anything.
PCIE_IRRELEVANT_COPY_SHARE = 0.05

#: Data wait p95 at least this many times its p50: bursty waits, which a deeper prefetch absorbs.
BURSTY_P95_OVER_P50 = 3.0
#: ... and only where the median step waits at most this share of the median step's wall: the workers keep
#: up on average. Workers too slow to keep up also wait in bursts (long and short by turns, as each
#: delivers), and a deeper queue cannot fill faster than they produce (docs/verdicts.md).
BURSTY_MAX_MEDIAN_WAIT_SHARE = 0.1
#: One step's wait (not an iteration's start) holding at least this share of the window's wait, without
#: which the window is below INPUT_WARN_SHARE, and no other step of the ring's history waiting half as
#: long: a one-off stall, left out of the verdict, so that one slow next() (a storage or GC hiccup) does
#: not make a compute-bound window read input-bound (docs/verdicts.md).
ONE_OFF_STALL_SHARE = 0.5
#: Steps that ran torch.save taking at least this share of the window beyond a typical step: the
#: checkpoints are named, with what makes them cheaper, rather than their time counted as compute
#: (whose advice, mixed precision or torch.compile, would not touch it).
CHECKPOINT_WARN_SHARE = 0.1
#: ... and at least this share of the loop's own work (the loop-bound rule): the checkpoints are what
#: holds the loop, and their remedy leads its advice.
CHECKPOINT_LEADS_LOOP_SHARE = 0.5
#: Steps inside which the loop made a pass over another loader (validation every N steps) taking at least
#: this share of the window beyond a typical step: the passes are named, with what makes them cheaper, in
#: place of the advice for per-step bookkeeping or compute; they lead the loop-bound rule's advice by
#: CHECKPOINT_LEADS_LOOP_SHARE as checkpoints do.
NESTED_PASS_WARN_SHARE = 0.1
#: Spikes: at most this fraction of the window's steps ...
SPIKE_MAX_STEP_FRACTION = 0.05
#: ... hold at least this fraction of its data wait (the epoch-start pattern of non-persistent workers).
SPIKE_MIN_WAIT_FRACTION = 0.5

#: Epoch starts: when the steps whose iter(loader) started the workers (non-persistent workers) hold at
#: least this share of the data wait, restarting workers is the cause: persistent_workers=True.
WORKER_START_WAIT_SHARE = 0.3
#: A new iterator every step: at least this share of a window's steps (of at least NEW_ITERATOR_MIN_STEPS)
#: begin an iteration over a loader. Epochs, validation passes and zipped loaders' iterations are
#: tens of steps or more; a loop that calls ``next(iter(loader))`` makes every step an iteration's first.
#: (Above half: a one-batch validation pass after every training step makes half of them.)
NEW_ITERATOR_STEP_SHARE = 0.6
NEW_ITERATOR_MIN_STEPS = 8
#: Restarts hold at least this share of the wait: persistent_workers=True comes first, and more workers
#: only as "look again" (a second change at once hides which one helped, and each restart starts every
#: worker again, so more of them make it dearer). Scenario j: 72% of the wait in epoch starts, the rest
#: 22% of the window's time (docs/measurements/h200-2026-12-01-s6).
RESTARTS_FIRST_SHARE = 0.5

#: NVML utilisation speaks for a rank only while it steps: its last step ended no longer ago than this
#: many typical steps (and at least NVML_FRESH_MIN_S). A job tearing down reads 0% without being slow.
NVML_FRESH_STEPS = 3
NVML_FRESH_MIN_S = 1.5
#: NVML's utilisation and PCIe RX average a sample period that ends when the GPU source read them. Where
#: the jobs state says when the rank's last step ended, a reading counts for the rank only if that step
#: ended no more than this (or NVML_FRESH_STEPS typical steps) before the reading: a reading taken after
#: the loop stopped averages the job's teardown (the HF Trainer read "busy 0%" right after its last step,
#: docs/measurements/h200-2026-12-03-s15). Within a step's jitter, below the jobs source's 0.5 s period.
NVML_READING_SLACK_S = 0.25
#: A rank is overdue for its next step past this many typical steps (and at least OVERDUE_MIN_S, above a
#: snapshot's jitter): its loop has stopped, and what the GPU and host show is no longer its steps.
OVERDUE_STEPS = 2
OVERDUE_MIN_S = 0.25

#: Copies not timed, GPU not busy, no data wait: the GPU's PCIe RX (its only user being this rank) gives
#: the time spent copying, between RX / link capacity (pinned copies at full speed: a lower bound) and
#: RX / PAGEABLE_H2D_MAX_BYTES_PER_S (pageable copies, the common untimed case). Copy-bound (likely)
#: when the lower bound reaches COPY_WARN_SHARE or the pageable estimate this share.
RX_COPY_BOUND_PAGEABLE_SHARE = 0.30
#: The fastest pageable host-to-device copy measured through PyTorch on an H200 (GPU-FACTS.md: 14.3 GB/s
#: at 16 MiB; 7 GB/s at 256 MiB and above).
PAGEABLE_H2D_MAX_BYTES_PER_S = 15e9
#: Pageable copies of large buffers run at half that (GPU-FACTS.md: 7.4 GB/s at 256 MiB, 6.8 at 1 GiB;
#: scenario d's 100 MB batches: 5.3 GB/s on the link at a 74% copy share, so ~7.2 GB/s while copying).
#: Where the link moves at least PAGEABLE_LARGE_STEP_BYTES per step (RX x the step's wall time), the
#: pageable estimate uses this rate: a 100 MB batch at 15 GB/s would be guessed at half its copy time.
PAGEABLE_H2D_LARGE_BYTES_PER_S = 7.0e9
PAGEABLE_LARGE_STEP_BYTES = 64 * 2**20
#: The step clock saw copies at less than this fraction of what the GPU's link received: copies made
#: where the clock does not look (a framework's own .to()).
H2D_SEEN_OF_RX_MIN = 0.5
#: Below this RX rate the cross-check says nothing (other traffic: the driver, small tensors).
RX_CROSS_CHECK_MIN_BYTES_PER_S = 0.5e9

#: DataLoader workers' allowed cores busier than this (percent, averaged over those cores): saturated.
CORES_SATURATED_PERCENT = 85.0
#: DataLoader workers of a CPU job that use at least this much of a core between them, on saturated
#: cores the training process shares: the model's threads (one a core by default) compete with them. Session
#: 48's trial (2 workers' Python collate at 76% of a core, 2 model threads, 2 cores 98.5% busy):
#: torch.set_num_threads(1) made each step 1.47x faster (57.7 ms against 85 ms); fewer workers were slower.
WORKERS_BESIDE_THREADS_PERCENT = 50.0
#: More workers than allowed cores, with those cores at least this busy: more workers cannot help. Below
#: it the workers mostly wait (storage latency), and more of them may still help.
OVERSUBSCRIBED_BUSY_PERCENT = 50.0
#: Workers that use less than this share of the CPU their cores could give them (the allowed cores, or the
#: quota, over the processes that want them) spend most of their time waiting on something other than a
#: core (storage, a network, a sleep): outnumbering their cores does not hold them, and more of them overlap
#: more of those waits. A CPU trial's job (2 workers sleeping 2 ms a sample on a 2-core VM, the cores 77%
#: busy with the training process's threads) used 17% of a core between them, against the 133% its cores
#: could give; with 4 workers its wait fell from 39% to 16% of the step (session 46).
WAITING_WORKERS_CPU_SHARE = 0.5
#: The loop waits for workers that mostly wait, and the training process's main thread stays on its CPU
#: through at least this share of that wait (the main thread's CPU, less all of the step outside the wait:
#: a lower bound): the main process does the loader's work itself (a Sampler drawing the indices, unpacking
#: the workers' batches), and more workers cannot help. Session 47's trial: a Sampler with Python work per
#: index, 58% of each step in next() (its truth), 2 workers using 19% of a core between them; 4 workers ran
#: it in 20.62 s against 20.76 s with 2.
MAIN_BUSY_IN_WAIT_SHARE = 0.5
#: The workers' cgroup ran out of its CPU quota (cpu.stat nr_throttled over nr_periods, over ~10 s) in
#: at least this share of the periods in which it ran: it uses all the CPU it may, and more workers
#: cannot help. kube-prometheus's CPUThrottlingHigh alert fires at the same 25% (over 5 minutes). A job
#: whose demand exceeds its quota is throttled in nearly every period (a busy loop at a 0.5-core quota:
#: tests/sources/test_cgroup_cpu_real.py); one that just touches it now and then stays well below.
CGROUP_THROTTLED_SHARE = 0.25
#: A throttled cgroup uses its quota up only where its CPU time over the same span reaches this share of
#: what the quota allowed (the same bar as CORES_SATURATED_PERCENT for cores); below it, it is throttled
#: in bursts (many threads at once, then idle: intra-op threads sized to the host's cores, not the
#: quota), has CPU to spare on average, and more workers may still help. Where the usage is unknown
#: (cgroup v1 without cpuacct on the cpu mount), throttling alone is read as the quota used up.
QUOTA_USED_UP_SHARE = 0.85

#: Pinned host memory of a host's ranks at or above this share of its RAM: a warning (it cannot be
#: swapped or reclaimed; workers x prefetch_factor x batch size pinned buffers add up).
PINNED_RAM_WARN_SHARE = 0.25
#: Available memory below this share of RAM while swap is in use: the host is swapping.
SWAPPING_AVAILABLE_SHARE = 0.10

#: Steps that copied bytes, of which fewer than this fraction came from pinned memory: "pageable".
PINNED_MIN_STEP_FRACTION = 0.5

#: Straggler: one rank's input share (idle gap, else data wait) above the median of the ranks by this
#: much (TraceML's straggler score: warn 0.10, critical 0.20) ...
STRAGGLER_WARN_EXCESS_SHARE = 0.10
STRAGGLER_CRITICAL_EXCESS_SHARE = 0.20
#: ... while the other ranks' median compute exceeds the straggler's by at least this share of its
#: step: they wait for it inside their collectives, which their clock counts as compute.
STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE = 0.05

#: The loop's own work (before the model or after the step) that holds the GPU idle, or on a CPU the
#: loop's wall, at least this share: loop-bound (the same bar as the input's).
LOOP_WARN_SHARE = 0.10
#: A CPU job without DataLoader workers on this many cores or fewer is told to split them between the
#: workers and the model's threads (torch.set_num_threads), not to add 2-4 workers: on 2 cores a trial's
#: job ran no faster with 1 or 2 workers beside torch's 2 intra-op threads.
CPU_JOB_FEW_CORES = 4
#: A loop-bound headline names the loop's other part (before the model, after the step) beside the one
#: that leads, each with its share, from this share of the step; below it only the leading part and its
#: own share are said (a trial's checkpointing job read "after the step ... it takes 26%" where the
#: work after the step was 24% and 2% came before the model).
LOOP_PART_NAMED_SHARE = 0.05
#: The loop's thread was blocked (neither on a CPU nor waiting for one: RankState.loop_pre_blocked_share)
#: through at least this share of its own work before the model: that work is a wait for its batches (a
#: queue's get() for a producer thread's, a socket, a read), input, not work to move elsewhere; after the
#: step, a sleep or I/O of its own. Session 48's trial: a producer thread feeding a queue.Queue read
#: "loop-bound: the loop's own work before the model ... 57%", its truth 56% in q.get().
LOOP_BLOCKED_SHARE = 0.5
#: The loop's work after the step follows a sync in at least this fraction of steps: the sync drained
#: the GPU's queue for it, and the verdict is sync-bound.
SYNCED_STEPS_FRACTION = 0.5
#: ... and the syncs themselves wait at least this share of the step. Dropping a sync lets the GPU's
#: queued work overlap the host's work after it, so it buys at most the sync's own wait: a sync that
#: finds the GPU already drained (a small model's loss.item()) is not the cause, the loop's work is.
SYNC_WAIT_WARN_SHARE = 0.10
#: A copy share is believed only where the bytes moved explain it at this slowest rate (pageable H2D
#: of small tensors runs at ~3 GB/s on an H200: GPU-FACTS.md), plus a slack share for per-call overhead.
COPY_FLOOR_BYTES_PER_S = 1.0e9
COPY_UNEXPLAINED_SLACK_SHARE = 0.05

#: A GPU busy (NVML) less than this share of the window waits for the host: compute is then the host's,
#: not the GPU's (research/diagnosis.md: a busy share under 50% vetoes compute-bound), and the verdict is
#: loop-bound or launch-bound, never compute-bound or healthy (docs/attach.md).
#: At least this busy, the GPU is what a sync on a line of the loop's body waits for: the window shows
#: the training loop running even where it caught none of the loop's DataLoader or model calls.
GPU_BUSY_MIN_SHARE = 0.5

#: Time between a loader's iterations, where no step runs (the code after each epoch), as a share of the
#: window's time: from BETWEEN_NOTE_SHARE the advice says so; from BETWEEN_LEADS_SHARE it is the verdict
#: (loop-bound: most of the time is the script's own code between epochs), critical from
#: BETWEEN_CRITICAL_SHARE.
BETWEEN_NOTE_SHARE = 0.2
BETWEEN_LEADS_SHARE = 0.5
BETWEEN_CRITICAL_SHARE = 0.7

#: A prefetch thread of the job's own (a thread filling a bounded queue from the DataLoader) that waits
#: in next() at least this share of its time makes batches only as fast as the loader does: its queue
#: stays empty, so the training loop, which takes them from it, waits for the loader (input-bound). A
#: prefetcher that keeps up spends its time blocked on a full queue instead, and next() returns at once.
PREFETCHER_STARVED_SHARE = 0.9

#: An input-bound loader with workers whose batches hold this many samples or fewer: each batch's fixed
#: cost of crossing from a worker (pickled, queued, unpacked by the main process: ~0.1-1 ms) is likely
#: the wait, not the samples' own (session 28's j41: batch_size=1, 2 workers, 56% of each step waiting).
TINY_BATCH_MAX_SAMPLES = 4
#: ... and whose median wait is this short (ms): a batch's fixed cost, not its samples' (j41: ~0.6 ms).
TINY_BATCH_MAX_WAIT_MS = 2.0

#: Attach's launch-bound names the optimizer's step where it holds at least this share of the host's
#: samples in the model step: an offloaded optimizer's CPU arithmetic reads as dispatch to the samples
#: (a CPU AdamW over 4M parameters: 96-98%). 120 tiny layers with a per-parameter optimizer on the H200
#: (fixtures/pyspy_phases launch) held 55% there: the model's many kernels, which the advice leads with.
OPTIMIZER_LEADS_SHARE = 0.75
