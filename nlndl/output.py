"""Writing result files safely: checked before long work starts, replaced atomically after it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class OutputError(Exception):
    """An output path that cannot be written."""


def check_writable(path: Path) -> None:
    """Fail early, before any long run, if ``path`` cannot be created or replaced."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"{path}: error: is a directory, expected a file path")
    if not parent.is_dir():
        raise OutputError(f"{path}: error: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: error: directory {parent} is not writable")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path`` then rename, so a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, payload: Any) -> None:
    write_bytes_atomic(path, (json.dumps(payload, indent=1) + "\n").encode())
