"""Starting instrumented training processes: `xfertop run` and the `xfertop demo` job."""
