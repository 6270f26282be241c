"""JSON Schemas, one per dataset config: <benchmark>.<config>.schema.json."""
