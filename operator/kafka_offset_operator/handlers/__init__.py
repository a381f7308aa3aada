"""Kopf handlers and the operator's runtime: thin I/O around the decision functions in `deletion/`."""
