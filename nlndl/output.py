"""Writing result files safely: every path checked before long work starts, files written whole or not at all,
and nothing replaced or deleted that nlndl did not write.

Files whose names nlndl derives (``nlndl train -D OUT``, ``compile -D DIR``, ``ldpc train -D DIR``) go into an
:class:`OutputDir`. Its manifest ``.nlndl-manifest.json`` records each file nlndl wrote there with its SHA-256; a
file may be replaced or removed only while the manifest lists it with its current contents. New contents are
written to temporary files in the same directory and renamed into place once all of them are complete, and no
symbolic link inside the directory is followed. A file the user names (``--json PATH``) is replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nlndl.errors import NlndlError

MANIFEST = ".nlndl-manifest.json"
_UMASK = os.umask(0o022)
os.umask(_UMASK)
STAGING = ".nlndl-staging-"
STAGING_MARK = ".nlndl-staging"  # inside a staging directory: proves it is nlndl's to remove


class OutputError(NlndlError):
    """An output path that cannot be written (or must not be, since nlndl did not write it)."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_writable(path: Path) -> None:
    """Fail early, before any long run, if ``path`` (a file the user named) cannot be created or replaced."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"{path}: error: is a directory, expected a file path")
    if not parent.is_dir():
        raise OutputError(f"{path}: error: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: error: directory {parent} is not writable")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path`` then rename, so a crash never leaves half a file."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    except OSError as exc:
        raise OutputError(f"{path}: error: cannot write: {_reason(exc)}") from None
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # as an ordinary new file would be, not mkstemp's 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"{path}: error: cannot write: {_reason(exc)}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, payload: Any) -> None:
    write_bytes_atomic(path, (json.dumps(payload, indent=1) + "\n").encode())


def _sha256(path: Path, sync: bool = False) -> str:
    """The file's SHA-256; with ``sync``, its contents are also flushed to disk (one pass over a staged file)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        if sync:
            os.fsync(handle.fileno())
    return digest.hexdigest()


class OutputDir:
    """A directory into which nlndl writes files under names it derives, owning only what its manifest lists."""

    def __init__(self, root: Path, writer: str | None = None, inputs: Iterable[Path | str] = ()) -> None:
        self.root = root
        self.writer = writer  # the command writing (kg sketch, kg train, train, ...): it replaces only its own files
        self.inputs = {os.path.realpath(p) for p in inputs}  # files the run reads: never written over
        self.files: dict[str, str] = {}  # relative path -> sha256 of what nlndl wrote
        self.writers: dict[str, str] = {}  # relative path -> the command that wrote it
        self.dirs: set[str] = set()  # directories nlndl created (removed again when emptied)
        self.adopted: set[str] = set()  # files the user asked nlndl to continue from (--resume) and so replace
        self.mixed: dict[str, list[str]] = {}  # an earlier publish cut short: {"new": [...], "old": [...]}
        manifest = root / MANIFEST
        if root.is_symlink() and not root.is_dir():
            raise OutputError(f"{root}: error: is a broken symbolic link")
        if root.exists() and not root.is_dir():
            raise OutputError(f"{root}: error: exists and is not a directory")
        if manifest.is_symlink():
            raise OutputError(f"{manifest}: error: is a symbolic link; refusing to use it")
        if manifest.exists():
            try:
                data = json.loads(manifest.read_text())
                self.files = {str(k): str(v) for k, v in data["files"].items()}
                self.writers = {str(k): str(v) for k, v in data.get("writers", {}).items()}
                self.dirs = {str(d) for d in data.get("dirs", [])}
                self.mixed = {str(k): [str(n) for n in v] for k, v in data.get("mixed", {}).items()}
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise OutputError(
                    f"{manifest}: error: unreadable nlndl manifest ({exc}); remove it or choose another directory"
                ) from None

    # --- checks, before any long work ---

    def _parts(self, rel: str) -> list[str]:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or any(p in ("..", ".") for p in parts):
            raise ValueError(f"not a relative path inside the output directory: {rel!r}")
        return list(parts)

    def check(self, relpaths: Iterable[str], directories: Iterable[str] = ()) -> None:
        """Raise OutputError naming the first path nlndl may not write: a file it did not write (or that changed
        since), a symbolic link, a directory where a file goes or a file where a directory goes."""
        relpaths, directories = list(relpaths), list(directories)
        existing = self.root
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        self._check_names(existing, [*relpaths, *directories])
        if not self.root.exists():
            if not existing.is_dir() or not os.access(existing, os.W_OK):
                raise OutputError(f"{self.root}: error: cannot create the output directory (in {existing})")
            return
        if not os.access(self.root, os.W_OK):
            raise OutputError(f"{self.root}: error: directory is not writable")
        for rel in directories:
            self._check_path(rel, directory=True)
        for rel in relpaths:
            self._check_path(rel, directory=False)

    def _check_names(self, existing: Path, relpaths: list[str]) -> None:
        """Every name the run will create is one the file system takes (not too long), checked before the work
        whether or not the directory exists yet."""
        try:
            longest = os.pathconf(existing, "PC_NAME_MAX")
        except (OSError, ValueError):
            longest = 255
        for rel in relpaths:
            for part in (*self.root.parts[len(existing.parts) :], *self._parts(rel)):
                if len(os.fsencode(part)) > longest:
                    raise OutputError(
                        f"{self.root / rel}: error: file name too long ({len(os.fsencode(part))} bytes; "
                        f"this file system takes at most {longest})"
                    )

    def _check_path(self, rel: str, directory: bool) -> None:
        parts = self._parts(rel)
        path = self.root
        for depth, part in enumerate(parts):
            path = path / part
            last = depth == len(parts) - 1
            if path.is_symlink():
                raise OutputError(
                    f"{path}: error: is a symbolic link; nlndl does not follow links out of the output directory"
                )
            if not path.exists():
                return
            if not last or directory:
                if not path.is_dir():
                    raise OutputError(f"{path}: error: exists and is not a directory; refusing to replace it")
                continue
            if path.is_dir():
                raise OutputError(f"{path}: error: is a directory, where nlndl writes a file")
            if os.path.realpath(path) in self.inputs:
                raise OutputError(
                    f"{path}: error: is an input of this run; nlndl never writes over its own inputs: "
                    "choose another output directory"
                )
            self._check_owned(rel, path)

    def _check_owned(self, rel: str, path: Path) -> None:
        if rel in self.adopted:
            return
        other = self.writers.get(rel)
        if other is not None and self.writer is not None and other != self.writer:
            raise OutputError(
                f"{path}: error: written by nlndl {other}, and nlndl {self.writer} writes a file of the same name "
                "with other contents; refusing to replace it: give the two commands different output directories"
            )
        recorded = self.files.get(rel)
        if recorded is None:
            raise OutputError(
                f"{path}: error: exists and was not written by nlndl (not in {self.root / MANIFEST}); "
                "refusing to overwrite it: move it or choose another output directory"
            )
        try:
            current = _sha256(path)
        except OSError as exc:
            raise OutputError(f"{path}: error: cannot read: {_reason(exc)}") from None
        if current != recorded:
            raise OutputError(
                f"{path}: error: changed since nlndl wrote it; refusing to overwrite it: "
                "move it or choose another output directory"
            )

    # --- writing ---

    def publish(self, write: Callable[[Path], None], expected: Iterable[str] | None = None) -> list[str]:
        """Have ``write`` fill a staging directory inside the root, then move each file it wrote into place.

        Nothing is replaced until ``write`` has finished and every target has passed :meth:`check`; on a full
        disk or any other failure the staged files are removed and what was there stays as it was."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._remove_stale_staging()
            staging = Path(tempfile.mkdtemp(dir=self.root, prefix=f"{STAGING}{os.getpid()}-"))
            (staging / STAGING_MARK).write_text(f"nlndl's staging directory, process {os.getpid()}\n")
        except OSError as exc:
            raise OutputError(f"{self.root}: error: cannot create the output directory: {_reason(exc)}") from None
        try:
            try:
                write(staging)
                staged = sorted(
                    p.relative_to(staging).as_posix()
                    for p in staging.rglob("*")
                    if (p.is_file() or p.is_symlink()) and p != staging / STAGING_MARK
                )
                hashes = {}
                for name in staged:
                    if (staging / name).is_symlink():
                        raise OutputError(f"{self.root / name}: error: nlndl staged a symbolic link; not publishing")
                    hashes[name] = _sha256(staging / name, sync=True)
                    os.chmod(staging / name, 0o666 & ~_UMASK)
            except OSError as exc:
                raise OutputError(f"{self.root}: error: cannot write the output: {_reason(exc)}") from None
            if expected is not None and set(staged) - set(expected):
                extra = sorted(set(staged) - set(expected))
                raise OutputError(f"{self.root}: error: nlndl would write unplanned files {extra[:3]}")
            self.check(staged)
            done: list[str] = []
            try:
                for name in staged:
                    target = self.root / name
                    for parent in reversed(Path(name).parents[:-1]):
                        directory = self.root / parent
                        if not directory.exists():
                            directory.mkdir()
                            self.dirs.add(parent.as_posix())
                    try:
                        os.replace(staging / name, target)
                    except OSError as exc:
                        raise OutputError(self._cut_short(name, exc, done, staged)) from None
                    self.files[name] = hashes[name]
                    if self.writer is not None:
                        self.writers[name] = self.writer
                    done.append(name)
                self.mixed = {}
            except OSError as exc:
                raise OutputError(f"{self.root}: error: cannot write the output: {_reason(exc)}") from None
            finally:
                self._save_manifest()
            return staged
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _cut_short(self, name: str, exc: OSError, done: list[str], staged: list[str]) -> str:
        """The message of a publish whose rename of ``name`` failed after ``done`` were renamed: which files are
        new and which old. The manifest records the mixture until a later publish completes, and
        :meth:`mixed_note` says it on the next run."""
        old = [n for n in staged if n not in done and (self.root / n).exists()]
        if done:
            self.mixed = {"new": list(done), "old": old}
        mixed = (
            f"; the output is now mixed: {', '.join(done)} new, {', '.join(old)} from before (recorded in {MANIFEST})"
            if done
            else "; nothing was replaced"
        )
        return f"{self.root / name}: error: cannot replace it: {_reason(exc)}{mixed}"

    def mixed_note(self) -> str | None:
        """A warning when an earlier publish into this directory was cut short, leaving new and old files."""
        if not self.mixed:
            return None
        return (
            f"{self.root}: warning: an earlier run was cut short while writing here: "
            f"{', '.join(self.mixed.get('new', []))} are from it and {', '.join(self.mixed.get('old', []))} "
            "from the run before; this run writes the set anew"
        )

    def _remove_stale_staging(self) -> None:
        """Remove staging directories left by an nlndl process that was killed while publishing: its process id
        is in the name and no longer runs, and its marker file shows that nlndl made it."""
        for path in self.root.glob(f"{STAGING}*"):
            pid = path.name[len(STAGING) :].split("-")[0]
            if not pid.isdigit() or path.is_symlink() or not path.is_dir():
                continue
            mark = path / STAGING_MARK
            if mark.is_symlink() or not mark.is_file():
                continue  # not nlndl's: a user's directory of the same prefix stays
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(path, ignore_errors=True)
            except (PermissionError, OverflowError):
                pass

    def remove_tree(self, rel: str) -> list[str]:
        """Remove the files nlndl wrote under ``rel`` (unchanged since), then the directories it created there that
        are left empty; a file the user put there, or changed, stays, and so does its directory."""
        prefix = rel.rstrip("/") + "/"
        removed = []
        for name in sorted(self.files):
            if not name.startswith(prefix):
                continue
            path = self.root / name
            try:
                if path.is_symlink() or not path.is_file() or _sha256(path) != self.files[name]:
                    continue
                path.unlink()
            except OSError:
                continue
            del self.files[name]
            removed.append(name)
        for directory in sorted((d for d in self.dirs if d == rel or d.startswith(prefix)), key=len, reverse=True):
            try:
                (self.root / directory).rmdir()
                self.dirs.discard(directory)
            except OSError:
                pass  # not empty: it holds something nlndl did not write
        self._save_manifest()
        return removed

    def _save_manifest(self) -> None:
        payload = {
            "nlndl": "files nlndl wrote here, with their SHA-256; nlndl replaces or removes only these",
            "files": dict(sorted(self.files.items())),
            "writers": {k: v for k, v in sorted(self.writers.items()) if k in self.files},
            "dirs": sorted(self.dirs),
        }
        if self.mixed:
            payload["mixed"] = self.mixed
        write_json(self.root / MANIFEST, payload)


UNITS = {"": 1, "B": 1, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
MAX_SIZE = 2**60  # an exabyte: a larger limit is a typo


def parse_size(text: str) -> int:
    """``2GiB``, ``512MiB``, ``1000000`` -> bytes; ValueError on anything else (ASCII digits, finite, >= 1 byte)."""
    stripped = text.strip()
    if not stripped.isascii() or unicodedata.normalize("NFKC", stripped) != stripped:
        raise ValueError(f"cannot read size {text!r}; write e.g. 512MiB or 2GiB")
    number = stripped.rstrip("BbKkMmGgIi")
    unit = stripped[len(number) :].upper()
    if unit not in UNITS or not number.strip() or len(number) > 40:
        raise ValueError(f"cannot read size {text!r}; write e.g. 512MiB or 2GiB")
    try:
        value = float(number) * UNITS[unit]
    except ValueError:
        raise ValueError(f"cannot read size {text!r}; write e.g. 512MiB or 2GiB") from None
    if not math.isfinite(value) or value > MAX_SIZE:
        raise ValueError(f"size {text!r} is not a finite size up to 1 EiB")
    if value < 1:
        raise ValueError(f"size must be at least 1 byte, got {text!r}")
    return int(value)
