"""inspect_ai tasks of histbench's generative evaluations: `inspect eval histbench/<task>`.

Registered with inspect through the `inspect_ai` entry point of histbench's pyproject
(`pip install 'histbench[inspect]'`). Every task reads a build (`-T dataset=FOLDER_OR_HUB_ID`,
default build/<benchmark>-<version>; `-T revision=` for a Hub id), sends exactly the
prompts `histbench eval` sends (its system and user messages, its decoding and token
budgets), parses each answer with histbench's parser and reports histbench's metrics
computed by histbench's own functions over the scored samples:

    italian_wsd, italian_ner_classense, italian_ner_bellini, italian_chrono_ranking,
    italian_authorship, italian_head, italian_deprel, italian_intertext   (italian.py)
    chronoculture                                                         (chronoculture.py)
    chronologic_generate                                                  (chronologic.py)
    mher_name_only, mher_context_only, mher_source_grounded, mher_shuffled_a,
    mher_shuffled_b, mher_shuffled_c, mher_unresolved                     (mher.py)

Valence has no generative evaluation (a masked LM fills one mask; inspect drives chat and
generation models). chronologic_generate scores Chronologic-EN's pass/fail questions with
the pass/fail judge; its partial-credit questions are scored against frozen anchors
(`histbench eval chronologic --mode anchors / judge`), which stays with histbench; see
docs/interop.md.
"""

from .chronoculture import chronoculture
from .chronologic import chronologic_generate
from .italian import (
    italian_authorship,
    italian_chrono_ranking,
    italian_deprel,
    italian_head,
    italian_intertext,
    italian_ner_bellini,
    italian_ner_classense,
    italian_wsd,
)
from .mher import (
    mher_context_only,
    mher_name_only,
    mher_shuffled_a,
    mher_shuffled_b,
    mher_shuffled_c,
    mher_source_grounded,
    mher_unresolved,
)

__all__ = [
    "chronoculture", "chronologic_generate",
    "italian_authorship", "italian_chrono_ranking", "italian_deprel", "italian_head", "italian_intertext",
    "italian_ner_bellini", "italian_ner_classense", "italian_wsd",
    "mher_context_only", "mher_name_only", "mher_shuffled_a", "mher_shuffled_b", "mher_shuffled_c",
    "mher_source_grounded", "mher_unresolved",
]
