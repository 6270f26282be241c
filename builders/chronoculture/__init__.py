"""ChronoCulture builder: WVS and ISSP survey files -> temporal pairs ("ChronoCulture: Evaluating
Cultural Awareness Across Time in Large Language Models", Saha, Khurana, Huang and Huang).

`BUILDER` plugs into `histbench build chronoculture`; `distance` (normalised Wasserstein
W and shift categories) is shared with the evaluator.
"""

from .builder import ChronoCultureBuilder

BUILDER = ChronoCultureBuilder()

__all__ = ["BUILDER", "ChronoCultureBuilder"]
