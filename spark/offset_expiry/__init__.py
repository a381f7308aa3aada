"""The data plane: a PySpark job that reads `__consumer_offsets` and says which offsets expire when."""
