import sys, statistics, pathlib, tempfile
sys.path.insert(0, "tests"); sys.path.insert(0, "tests/reporter")
import test_watch_parts as t
from xfertop.analysis.verdict import rank_verdict, window_or_early
for i in range(int(sys.argv[1])):
    d = pathlib.Path(tempfile.mkdtemp())
    steps, res = t._run(d, instrument=False)
    w = steps[10:]
    st = window_or_early(w)
    print(round(st.data_wait_share*100, 2), "% wait; median wait ms", round(statistics.median(s.data_wait_ms for s in w), 3), rank_verdict(w).kind)
