"""Dataset card templates, one per benchmark: <benchmark>.md."""
