"""kafka-offset-operator: Kafka consumer-group offsets managed as Kubernetes resources."""

__version__ = "0.1.0"
