"""The live view at 160x48 in a pty for SECONDS, its main thread's CPU split by what it ran (Textual's
compositor, writing the frame, the repaint, the analysis), counted after 8 s by sitecustomize.py here;
threads' CPU over 20 s in OUT.threads. python run_view.py SECONDS OUT [xfertop args]"""
import os, sys, time, json, subprocess
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../benchmarks"))
from pty_run import PtyProcess
secs = float(sys.argv[1]); out = sys.argv[2]; extra = sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""), PROF_OUT=out, PROF_SKIP_S="8", PROF_TARGETS=",".join([
 "textual.screen:Screen._compositor_refresh", "textual.screen:Screen._refresh_layout",
 "textual._compositor:Compositor.render_update", "textual.app:App._display",
 "xfertop.ui.repaint:Repainter._paint", "xfertop.ui.repaint:Repainter.repaint_dirty",
 "xfertop.analysis.job_analysis:analyse", "xfertop.ui.repaint:Repainter._on_tick",
 "xfertop.ui.text_lines:TextLines.update_lines", "xfertop.ui.text_lines:TextLines.render_line",
 "xfertop.ui.snapshot_inbox:SnapshotInbox.take",
]))
t = PtyProcess([sys.executable, "-m", "xfertop", *extra], columns=160, rows=48, env=env)
t.read_for(secs)
t.send(b"q"); t.wait(10); t.close(); open(out + ".screen","wb").write(bytes(t.output))
print(json.dumps(json.load(open(out)), indent=1))
