"""The Textual face of xfertop: renders the latest snapshots, never samples hardware itself."""
