"""What the operator decides, as plain functions: data in (specs, statuses, Kafka's answers), data out
(plans, status patches, manifests, events). No I/O, and no Kopf, Kubernetes or Kafka client."""
