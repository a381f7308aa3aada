"""ConsumerGroupOffsetPolicy: decisions as plain functions (spec, results, plan, schedule, keep-alive) and
the two analysis engines (a local child process, a SparkApplication). The Kopf handlers in
handlers/policy.py only move data between Kubernetes, Kafka and these functions."""
