"""The analysis engines: Job (a Kubernetes Job), SparkApplication (spark-operator), Local (a warm local Spark worker)."""
