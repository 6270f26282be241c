"""The project's exception types.

Every problem a user can cause (a missing file, a bad value in a source, a record that
breaks its schema, an evaluation that cannot run) is raised as a `HistbenchError`
subclass. The error carries where it happened (file, row, field) so that the message
names it; the CLI prints `str(error)` and exits with status 2.
"""

from __future__ import annotations

from os import PathLike

MAX_HEADLINE = 2000


def _one_line(text: str) -> str:
    return str(text).replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")


class HistbenchError(Exception):
    """Base class of every error histbench raises on purpose.

    `details` are extra lines (e.g. the list of failing records) shown under the
    one-line message.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | PathLike | None = None,
        row: int | str | None = None,
        field: str | None = None,
        details: list[str] | None = None,
    ) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.row = row
        self.field = field
        self.details = list(details or [])
        super().__init__(self.headline())

    def headline(self) -> str:
        """One line: where (file, row, field), then the message. Line breaks that a quoted
        value brought in are shown as \\n, and a message longer than MAX_HEADLINE characters
        (a 40 MB cell quoted back) is cut, saying how much was left out."""
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        message = _one_line(self.message)
        if len(message) > MAX_HEADLINE:
            message = f"{message[:MAX_HEADLINE]}... ({len(message) - MAX_HEADLINE:,} more characters)"
        return f"{_one_line(prefix)}: {message}" if prefix else message

    def __str__(self) -> str:
        return self.headline()


class UsageError(HistbenchError):
    """Bad command-line usage or options."""


class SourceError(HistbenchError):
    """A raw input is missing, unreadable, of the wrong format or has bad content."""


class SchemaError(HistbenchError):
    """Records do not match their JSON schema."""


class BuildError(HistbenchError):
    """A build cannot be completed (other than a bad source or schema)."""


class ValidationError(HistbenchError):
    """A built dataset folder does not match its own histbench.json."""


class EvalError(HistbenchError):
    """An evaluation cannot run: bad model spec, backend failure, unusable dataset or run folder."""


class MissingDependencyError(HistbenchError):
    """An optional dependency is not installed; the message names the extra that installs it
    (see histbench.core.extras)."""
