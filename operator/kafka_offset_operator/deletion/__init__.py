"""OffsetDeletion decisions as plain functions: data in (spec, status, what Kafka says), data out (the next
step, a status patch, events). No Kubernetes or Kafka I/O here; handlers/deletion.py does that.
The state machine is documented in docs/offset-deletion.md."""
