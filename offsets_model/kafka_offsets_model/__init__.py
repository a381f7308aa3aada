"""Kafka's consumer-offsets model, the core the operator, the Spark job, the CLI and the sandbox broker share:
the `__consumer_offsets` codec and raw records, the broker's expiry rules, durations, the error types, and the
policy model with its schema. Pure Python, no Spark, Kopf or Kubernetes (docs/architecture.md)."""
