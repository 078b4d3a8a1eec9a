"""Dagster wiring only: Definitions, resources, jobs, schedules. Nothing imports it."""
