"""The operator's edges: the Kubernetes API, Kafka's admin API, `__consumer_offsets`, the stores kept in
ConfigMaps, and the Prometheus metrics it exports."""
