"""Dagster software-defined assets, one module per stage: config in, ops call, metadata out."""
