"""The jobs behind the CLI's verbs, as library functions, one module per domain: :mod:`nlndl.jobs.ilp` (compile,
train, export, check a sketch), :mod:`nlndl.jobs.kg` (knowledge graphs), :mod:`nlndl.jobs.ldpc` (LDPC codes);
this module holds what they share (output folders, records). What each verb computes and writes, with every
check done before the long work starts. No printing and no exit codes (the CLI's business): what a user can
act on is raised as a :class:`JobError`, a ``CompileError`` or an ``OutputError``, each with its located
message. Torch is imported by the jobs that train, not by these modules, so that compiling and checking start
fast."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from nlndl.errors import JobError
from nlndl.output import OutputDir

PROGRAM_FILES = ["program.json", "arrays.safetensors"]  # what ``compile -o`` and ``ldpc compile -o`` write


def check_device(device: str) -> None:
    """``device`` is cpu, cuda or cuda:N (ValueError otherwise), and a CUDA device exists when asked for."""
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"--device {device}: expected cpu or cuda")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise JobError(f"error: --device {device}: no CUDA device is available (torch {torch.__version__})")


def output_dir(
    path: Path, files: Sequence[str] = PROGRAM_FILES, dirs: Sequence[str] = (), writer: str | None = None
) -> OutputDir:
    """The directory ``path``, checked before the work: ``files`` may replace an earlier output of the same
    ``writer`` (the command) there, nothing else (OutputError)."""
    directory = OutputDir(path, writer)
    directory.check(list(files), list(dirs))
    return directory


def save(directory: OutputDir, write: Callable[[Path], None], files: Sequence[str] = PROGRAM_FILES) -> None:
    """Write an artefact into ``directory`` whole or not at all, replacing only nlndl's earlier one."""
    directory.publish(write, expected=list(files))


def changed_files(then: dict[str, str], now: dict[str, str]) -> list[str]:
    """What differs between two records of files by SHA-256 (name -> digest): changed, new, gone."""
    out = [f"{name} changed" for name in sorted(set(then) & set(now)) if then[name] != now[name]]
    out += [f"{name} is read now and was not then" for name in sorted(set(now) - set(then))]
    out += [f"{name} was read then and is not now" for name in sorted(set(then) - set(now))]
    return out


def from_record(path: Path, directory: Path) -> str:
    """``path`` as a record in ``directory`` names it: relative to that directory (absolute on another drive)."""
    try:
        return os.path.relpath(Path(path).resolve(), Path(directory).resolve())
    except ValueError:  # Windows: no relative path between drives
        return str(Path(path).resolve())


def recorded_path(results: Path, text: str) -> Path:
    """A path a record names, relative to the record's directory (older records hold absolute ones)."""
    return Path(results).parent / text


def read_record(results: Path) -> dict:
    """A <name>.json written by ``nlndl train``, its fields checked (JobError located at the file otherwise)."""
    try:
        record = json.loads(Path(results).read_text())
        if isinstance(record, dict) and "relations" in record and "closure" in record:
            raise JobError(
                f"{results}:1:1: error: this is the record of nlndl kg train, not of nlndl train: its rules are "
                f"already exported beside it, as {Path(results).parent / 'rules.dl'} (Soufflé) and "
                f"{Path(results).parent / 'rules.lp'} (clingo)"
            )
        rules, seed, subgraph = record["rules"], int(record.get("seed", 0)), record.get("subgraph")
        Path(record["sketch"])
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise TypeError("'rules' is not a list of strings")
        if seed < 0:
            raise ValueError(f"'seed' is negative ({seed})")
        if subgraph is not None and subgraph != "auto" and (not isinstance(subgraph, int) or subgraph < 2):
            raise TypeError("'subgraph' is not 'auto' or a whole number of at least 2")
        if not isinstance(record.get("background", []), list):
            raise TypeError("'background' is not a list")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise JobError(f"{results}:1:1: error: not a results file written by nlndl train ({exc})") from None
    return record
