"""Per-benchmark source manifests, registries and bundled sample sources."""
