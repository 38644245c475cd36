"""xfertop: see why training is slow. The public reporter API lives here (cheap to import)."""

__version__ = "0.1.0"
