"""histbench builders: one sub-package per benchmark, plus `machinery` (source manifests,
the dataset writer, cards, validation, the Hub push). Imports the shared core
(histbench.core), never histbench.eval."""
