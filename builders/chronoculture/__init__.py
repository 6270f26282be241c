"""ChronoCulture builder: WVS and ISSP survey files -> temporal pairs (Saha et al. 2026, ChronoCulture).

`BUILDER` plugs into `histbench build chronoculture`; `distance` (normalised Wasserstein
W and shift categories) is shared with the evaluator.
"""

from .builder import ChronoCultureBuilder

BUILDER = ChronoCultureBuilder()

__all__ = ["BUILDER", "ChronoCultureBuilder"]
