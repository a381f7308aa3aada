"""One visit of each resource kind: read, decide (decisions/), act (adapters/, engines/), write the status."""
