"""The project's exception types.

Every problem a user can cause (a missing file, a bad value in a source, a record that
breaks its schema, an evaluation that cannot run) is raised as a `HistbenchError`
subclass. The error carries where it happened (file, row, field) so that the message
names it; the CLI prints `str(error)` and exits with status 2.
"""

from __future__ import annotations

import re
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
        """One line: where (file, row, field), then the message (a field alone, such as the
        option `--model`, is left out when the message names it, and an option comes after
        the message). Line breaks that a quoted
        value brought in are shown as \\n, and a message longer than MAX_HEADLINE characters
        (a 40 MB cell quoted back) is cut, saying how much was left out."""
        message = _one_line(self.message)
        if len(message) > MAX_HEADLINE:
            message = f"{message[:MAX_HEADLINE]}... ({len(message) - MAX_HEADLINE:,} more characters)"
        if self.file is None and self.row is None and self.field is not None:
            # a field alone (a command-line option, an API keyword): what is wrong comes first;
            # the field is not said again where the message names it ("give exactly one of
            # --model SPEC or ..."), and an option the message does not name comes after it
            name = _one_line(self.field)
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", message):
                return message
            if name.startswith("-"):
                return f"{message} (option {name})"
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
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


class FileSystemError(HistbenchError):
    """The operating system refused a file operation (no permission, a read-only mount, a
    full disk, a file where a folder is expected, ...): `from_os_error` makes one from an
    OSError, naming the path and the operation."""


#: the function a traceback frame runs -> the operation it names (innermost match wins)
_OPERATIONS = {
    "mkdir": "create the folder", "makedirs": "create the folder", "mkdtemp": "create the folder",
    "rmdir": "remove the folder", "rmtree": "remove the folder", "unlink": "remove", "remove": "remove",
    "rename": "move", "replace": "move", "move": "move", "copy": "copy", "copyfile": "copy", "copy2": "copy",
    "copytree": "copy", "copymode": "copy", "read_text": "read", "read_bytes": "read", "write_text": "write",
    "write_bytes": "write", "touch": "create", "iterdir": "list the folder", "scandir": "list the folder",
    "listdir": "list the folder", "glob": "list the folder", "rglob": "list the folder", "stat": "look up",
    "symlink_to": "create the link", "chmod": "change the permissions of", "file_digest": "read",
    "sha256_path": "read",
}
#: when no frame names one: what the error number says was being done
_OPERATION_BY_ERRNO = {
    "ENOSPC": "write", "EDQUOT": "write", "EFBIG": "write", "EROFS": "write", "EACCES": "open", "EPERM": "open",
    "ENOENT": "find", "ENOTDIR": "open", "EISDIR": "open", "EEXIST": "create", "ENOTEMPTY": "remove the folder",
    "ELOOP": "follow the links of", "ENAMETOOLONG": "open", "EIO": "read or write", "EMFILE": "open",
}
#: a few words of advice for the errors a user can fix
_HINTS = {
    "ENOSPC": "free some space or write elsewhere", "EDQUOT": "your disk quota is used up",
    "EROFS": "choose a writable folder", "EACCES": "check the permissions", "EPERM": "check the permissions",
}


def _operation(exc: BaseException) -> str | None:
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        name = frame.f_code.co_name
        if name == "open":
            mode = frame.f_locals.get("mode")
            if isinstance(mode, str):
                return "write" if any(c in mode for c in "wax+") else "read"
            continue
        if name in _OPERATIONS:
            return _OPERATIONS[name]
    return None


def os_error_words(exc: OSError) -> tuple[str | None, str]:
    """(operation, reason) of an OSError: ('create the folder', 'Read-only file system
    (choose a writable folder)'); the operation is None when nothing says what it was."""
    import errno as errno_module

    code = errno_module.errorcode.get(exc.errno or -1, "")
    # a call naming two paths (os.rename, os.replace, os.link) is a move, whatever the error number
    operation = _operation(exc) or ("move" if exc.filename2 is not None else _OPERATION_BY_ERRNO.get(code))
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = _HINTS.get(code)
    return operation, f"{reason} ({hint})" if hint else reason


def from_os_error(exc: OSError) -> HistbenchError:
    """One line for an OSError that reached the command line: the path, the operation
    (from the traceback's innermost file-system call, else from the error number), the
    system's reason and, for a full disk, a read-only mount or a permission, what to do.

    `/data/out: cannot create the folder: Read-only file system (choose a writable folder)`."""
    operation, reason = os_error_words(exc)
    if exc.filename is None:
        # a network or device error: no path to name; the reason says what failed
        what = type(exc).__name__ if not exc.strerror else ""
        return FileSystemError(f"{what + ': ' if what else ''}{reason}" if not operation
                               else f"cannot {operation}: {reason}")
    target = f" it to {exc.filename2}" if exc.filename2 is not None and operation in ("move", "copy", None) else ""
    message = f"cannot {operation or 'use'}{target}: {reason}"
    return FileSystemError(message, file=str(exc.filename))
