"""The in-process step clock. Standard library and torch only; never raises into training."""
