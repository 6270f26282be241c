"""The name of chronologic's own results file in a run folder, and reading it.

Every run folder's results.json is the run format's (histbench.core.runfolder), so the
file in which `--mode likelihood` and `--mode generate` keep their own results (mode,
metrics, answers, counts, definitions, ...) is `chronologic.json`. Folders written before
the run format hold the same content under its old name, results.json (told apart from
the format's results.json by having no run_format); they are read under that name until
`histbench convert-run` (chronologic's summarise) copies it to chronologic.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.readers import read_json_object

OWN_NAME = "chronologic.json"
OLD_NAME = "results.json"


def _old_shaped(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and "run_format" not in data and data.get("benchmark") == "chronologic"


def own_path(run_dir: str | Path) -> Path | None:
    """chronologic.json of the folder, or the results.json of a folder written before the
    run format; None when the folder has neither."""
    run_dir = Path(run_dir)
    if (run_dir / OWN_NAME).is_file():
        return run_dir / OWN_NAME
    if (run_dir / OLD_NAME).is_file() and _old_shaped(run_dir / OLD_NAME):
        return run_dir / OLD_NAME
    return None


def read_own(run_dir: str | Path, what: str = "run") -> dict:
    """chronologic's own results of a run folder (see `own_path`); an EvalError naming the
    folder when it has none or the file is not chronologic's."""
    return read_own_file(own_path(run_dir), run_dir, what)


def read_own_file(path: Path | None, run_dir: str | Path, what: str = "run") -> dict:
    """chronologic's own results from `path` (None or missing: an EvalError naming `run_dir`)."""
    if path is None or not Path(path).is_file():
        raise EvalError(f"no {OWN_NAME} here (is the {what} finished? rerun its eval command to complete it)",
                        file=run_dir)
    data = read_json_object(path, error=EvalError)
    if data.get("benchmark") != "chronologic":
        raise EvalError(f"not a chronologic result (benchmark {data.get('benchmark')!r})", file=path, field="benchmark")
    return data
