"""Model backends: one interface over transformers (`hf`), OpenAI-compatible chat APIs (`api`)
and vLLM (`vllm`).

    from histbench.core.backends import load_backend, GenerateRequest
    backend = load_backend("hf:HuggingFaceTB/SmolLM2-135M-Instruct", {"dtype": "float32"})
    backend.supports            # frozenset({"generate", "loglikelihood"})
    backend.generate([GenerateRequest(messages=[{"role": "user", "content": "Hi"}])])

Evaluators normally pass requests through `histbench.core.runstore.RunStore`, which saves
every answer and never asks twice. Importing this package is light (no torch): the hf and
vllm backends import their libraries when a model is first used.
"""

from .base import (
    FILL_MASK,
    GENERATE,
    LOGLIKELIHOOD,
    MASK_SPELLINGS,
    Backend,
    FillMaskRequest,
    FillMaskResult,
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    Request,
    RequestFailed,
    Result,
    request_from_dict,
    result_from_dict,
)
from .spec import add_model_arguments, backend_from_args, load_backend, options_from_args, split_spec

__all__ = [
    "FILL_MASK",
    "GENERATE",
    "LOGLIKELIHOOD",
    "MASK_SPELLINGS",
    "Backend",
    "FillMaskRequest",
    "FillMaskResult",
    "GenerateRequest",
    "GenerateResult",
    "LoglikelihoodRequest",
    "LoglikelihoodResult",
    "Request",
    "RequestFailed",
    "Result",
    "add_model_arguments",
    "backend_from_args",
    "load_backend",
    "options_from_args",
    "request_from_dict",
    "result_from_dict",
    "split_spec",
]
