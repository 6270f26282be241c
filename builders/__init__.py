"""histbench builders: one sub-package per benchmark, plus `core`."""
