"""The machinery every benchmark builder shares: source manifests, schema checks,
the dataset writer, validation and hub upload (see DESIGN.md, "Data flow")."""
