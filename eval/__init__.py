"""histbench evaluators: model backends, the run store, likelihood scoring, metrics and reports."""
