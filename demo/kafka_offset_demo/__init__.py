"""The demo of kafka-offset-operator: a week of consumer groups played on the sandbox broker, kmock's
emulated Kubernetes API serving our CRDs, and the operator reconciling a policy against both. Not the
product: the operator's wheel and image do not contain it."""
