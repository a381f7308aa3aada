"""The analysis engines: a warm local Spark worker, or a SparkApplication on spark-operator."""
