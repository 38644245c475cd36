"""The ring wire format: owned here, imported by both the reporter and the viewer."""
