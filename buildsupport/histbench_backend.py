"""histbench's PEP 517 build backend: setuptools' own (setuptools.build_meta), with the
folder setuptools works in moved out of the source folder.

Why: pip builds a project in its own folder (in-tree builds, pip 21.3 and later), and
setuptools copies the package into `<source>/build/lib` on its way to the wheel and leaves
the copy there. In a histbench checkout `build/` is where datasets and reports go, and a
stale copy of the package under it is picked up by tools that search the working folder
for code (`inspect list tasks` listed histbench's tasks from build/lib). setuptools reads
an extra configuration file named by the DIST_EXTRA_CONFIG environment variable; around
each build this backend points it at a file in a temporary folder that sets the `build`
command's build_base to that folder, which is removed afterwards.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401 - the hooks that need no change, as setuptools has them
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

EXTRA_CONFIG = "DIST_EXTRA_CONFIG"


@contextmanager
def _build_outside_the_source() -> Iterator[None]:
    with tempfile.TemporaryDirectory(prefix="histbench-build-") as tmp:
        config = Path(tmp) / "setup.cfg"
        config.write_text(f"[build]\nbuild_base = {Path(tmp) / 'build'}\n", encoding="utf-8")
        before = os.environ.get(EXTRA_CONFIG)
        os.environ[EXTRA_CONFIG] = str(config)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(EXTRA_CONFIG, None)
            else:
                os.environ[EXTRA_CONFIG] = before


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _build_outside_the_source():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    with _build_outside_the_source():
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
