"""Writing result files safely: checked before long work starts, replaced atomically after it."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
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


PROGRAM_FILES = {"program.json", "arrays.safetensors"}


def check_replaceable_program(path: Path) -> None:
    """A compiled-program directory may replace an earlier one, never anything else the user has."""
    if path.exists():
        if not path.is_dir():
            raise OutputError(f"{path}: error: exists and is not a directory; refusing to overwrite it")
        extra = sorted(p.name for p in path.iterdir() if p.name not in PROGRAM_FILES)
        if extra:
            raise OutputError(
                f"{path}: error: directory holds other files ({', '.join(extra[:3])}); refusing to overwrite it"
            )
    check_writable(path / "program.json" if path.is_dir() else path)


def replace_directory(path: Path, write: Callable[[Path], None]) -> None:
    """Have ``write`` fill a fresh temporary directory beside ``path``, then swap it into place."""
    parent = path.parent if str(path.parent) else Path(".")
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{path.name}."))
    try:
        write(tmp)
        if path.exists():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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


UNITS = {"": 1, "B": 1, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}


def parse_size(text: str) -> int:
    """``2GiB``, ``512MiB``, ``1000000`` -> bytes; ValueError on anything else."""
    stripped = text.strip()
    number = stripped.rstrip("BbKkMmGgIi")
    unit = stripped[len(number) :].upper()
    if unit not in UNITS or not number.strip():
        raise ValueError(f"cannot read size {text!r}; write e.g. 512MiB or 2GiB")
    value = float(number) * UNITS[unit]
    if value <= 0:
        raise ValueError(f"size must be positive, got {text!r}")
    return int(value)
