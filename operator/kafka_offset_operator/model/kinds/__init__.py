"""One file per kind: its fields written once (kafka_offsets_model.typed_schema), the CRD schema and the parse
both come from them; common.py holds what the kinds share."""
