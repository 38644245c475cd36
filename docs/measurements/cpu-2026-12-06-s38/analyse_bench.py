"""analyse() on pickled snapshots (analyse_states.py), with a given tree's src: ms a call.

    python analyse_bench.py TREE/src STATES.pkl

15 rounds of 60 calls over the six snapshots in turn (each call's ``previous`` the one before, as the view
does); prints the fastest round and the median. Run two trees in alternation: the CPU VM is noisy.
"""
import pickle, sys, time

sys.path.insert(0, sys.argv[1])
from xfertop.analysis.job_analysis import analyse

states, host = pickle.load(open(sys.argv[2], "rb"))
previous, rounds = None, []
for _ in range(15):
    started = time.perf_counter()
    for i in range(60):
        previous = analyse(states[i % 6], None, previous, host=host)
    rounds.append((time.perf_counter() - started) / 60 * 1e3)
rounds.sort()
print(sys.argv[1], f"min {rounds[0]:.3f} median {rounds[7]:.3f} ms")
