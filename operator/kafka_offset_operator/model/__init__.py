"""Values every layer shares: the API's names, Kafka offsets and groups, connection settings, the analysis
report and the CRD schemas. Plain data: nothing here imports Kopf, a Kubernetes client or a Kafka client."""
