import os
off = set(filter(None, os.environ.get("ABLATE", "").split(",")))
if off and os.environ.get("XFERTOP_FAKE_TESTS_DIR"):
    if "strip" in off:
        from xfertop.ui import step_strip
        step_strip.StepStrip.build_lines = lambda self, width: []
    if "processes" in off:
        from xfertop.ui import process_table
        _show = process_table.ProcessTable.show
        done = {}
        def show(self, view):
            if not done.get(id(self)) or len(view.gpu.gpus if view.gpu else []) == 0:
                r = _show(self, view)
                if view.jobs is not None and view.gpu is not None:
                    done[id(self)] = True
                return r
        process_table.ProcessTable.show = show
    if "gpu" in off:
        from xfertop.ui import gpu_area
        _show = gpu_area.GpuArea.show
        done = {}
        def gshow(self, state):
            if done.get(id(self), 0) < 3:
                done[id(self)] = done.get(id(self), 0) + 1
                return _show(self, state)
        gpu_area.GpuArea.show = gshow
    if "header" in off:
        from xfertop.ui import header
        _bl = header.HeaderBar.build_lines
        kept = {}
        def hbl(self, width):
            if id(self) not in kept or len(kept[id(self)]) == 0:
                kept[id(self)] = _bl(self, width)
            return kept[id(self)]
        header.HeaderBar.build_lines = hbl
