"""MHER (Mongol-world Historical Entity Reconciliation): the builder.

`BUILDER` turns a source-linked registry folder into the benchmark's configs following
the construction rules of the MHER paper (section 4); see builders/mher/builder.py.
"""

from .builder import MherBuilder

BUILDER = MherBuilder()

__all__ = ["BUILDER", "MherBuilder"]
