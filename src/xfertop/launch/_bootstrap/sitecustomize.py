"""`xfertop run` puts this directory first on the child's PYTHONPATH, so Python runs this at start-up.

It installs the DataLoader hook (xfertop.launch.autopatch), then runs the sitecustomize that would
have run without us, if there is one. It never stops the program from starting: a failure is one
line on stderr and the job runs unobserved.
"""

import os
import sys


def _xfertop_install() -> None:
    if os.environ.get("XFERTOP_RUN") != "1":
        return
    try:
        try:
            import xfertop.launch.autopatch as autopatch
        except ImportError:
            parent = os.environ.get("XFERTOP_PACKAGE_PARENT")
            if not parent:
                raise
            sys.path.append(parent)  # appended: never shadows the job's own packages
            try:
                import xfertop.launch.autopatch as autopatch
            finally:
                # Gone again: xfertop is loaded (it needs nothing else from there), and the job must not
                # find the other packages of xfertop's environment (optional-dependency checks).
                sys.path.remove(parent)
        autopatch.install(copy_timing=os.environ.get("XFERTOP_COPY_TIMING") == "1")
    except Exception as exc:
        sys.stderr.write(f"xfertop run: could not instrument this process ({exc}); it runs unobserved.\n")


def _chain_to_the_next_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))  # real paths: a symlinked alias is us too
    rest = [entry for entry in sys.path if os.path.realpath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_xfertop_install()
_chain_to_the_next_sitecustomize()
