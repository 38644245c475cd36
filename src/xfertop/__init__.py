"""xfertop: see why training is slow. The public reporter API lives here (cheap to import: no torch)."""

from xfertop.reporter import mark_copied, step, to_device, watch

__version__ = "0.1.0"
__all__ = ["__version__", "mark_copied", "step", "to_device", "watch"]
