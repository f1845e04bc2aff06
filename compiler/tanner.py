"""LDPC Tanner graphs: parity-check matrices read (alist, 0/1 text) or generated, lowered to edge indices.

A Tanner graph has a variable node per code bit, a check node per parity check and an edge per 1 in
H. Message passing needs, for each edge, its variable and check, CSR pointers per node, and the
extrinsic (leave-one-out) neighbour edges at both ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from nlndl.compiler.diagnostics import size_text
from nlndl.defaults import LDPC_CODE

FORMAT = "nlndl-tanner/1"


class MatrixError(ValueError):
    """A parity-check matrix file that cannot be read; the message is located ``file:line:col: error: ...``."""


MAX_CODE_BYTES = 2 * 1024**3  # the dense matrices of a code (parity checks, variable overlaps) above this: refused


def code_bytes(n: int, m: int) -> int:
    """Peak bytes of compiling an m x n code: the dense uint8 matrix and the n x n int64 overlap of its columns."""
    return m * n + 9 * n * n


def check_code_size(n: int, m: int) -> str | None:
    """Why an m x n code is too large to compile here, or None."""
    need = code_bytes(n, m)
    if need <= MAX_CODE_BYTES:
        return None
    return (
        f"a code of length {n:,} with {m:,} checks needs about {size_text(need)} of dense matrices to compile, "
        f"over {size_text(MAX_CODE_BYTES)}: nlndl compiles codes up to a length of about 15,000"
    )


def gf2_rank(h: np.ndarray) -> int:
    """Rank of a 0/1 matrix over GF(2): its pivot count after elimination."""
    return len(_row_reduced(h)[1])


def four_cycles(h: np.ndarray) -> int:
    """Number of 4-cycles: pairs of variables sharing two checks, counted per pair of checks."""
    overlap = h.T.astype(np.int64) @ h.astype(np.int64)
    np.fill_diagonal(overlap, 0)
    return int((overlap * (overlap - 1) // 2).sum() // 2)


def generate_regular(n: int, dv: int, dc: int, seed: int = 0, swaps: int = 20000) -> np.ndarray:
    """A random (dv, dc)-regular parity-check matrix of length n without repeated edges, 4-cycles
    removed by edge swaps where possible (seeded; same seed, same matrix)."""
    if n < 1 or dv < 1 or dc < 2 or (n * dv) % dc:
        raise ValueError(f"no ({dv},{dc})-regular code of length {n}: n*dv must be a multiple of dc")
    m = n * dv // dc
    if (too_large := check_code_size(n, m)) is not None:
        raise ValueError(too_large)
    if dv > m:
        raise ValueError(f"column weight {dv} exceeds the {m} checks")
    if dc > n:
        raise ValueError(f"row weight {dc} exceeds the code length {n}")
    rng = np.random.default_rng(seed)
    checks = np.repeat(np.arange(m), dc)
    for _attempt in range(1000):  # configuration model until no repeated edge
        sockets = rng.permutation(np.repeat(np.arange(n), dv))
        h = np.zeros((m, n), dtype=np.uint8)
        np.add.at(h, (checks, sockets), 1)
        if h.max() <= 1:
            break
    else:  # repeated edges are likely for larger degrees ((4,8): about 1 draw in 40,000 has none): repair one
        sockets = _without_repeated_edges(checks, sockets, n, rng)
        h = np.zeros((m, n), dtype=np.uint8)
        h[checks, sockets] = 1
    overlap = h.T.astype(np.int64) @ h.astype(np.int64)
    np.fill_diagonal(overlap, 0)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    edges = int(h.sum())  # every check keeps dc edges through the swaps
    for _ in range(swaps):
        bad = np.argwhere((overlap >= 2) & upper)
        if bad.size == 0:
            break
        u, w = bad[rng.integers(len(bad))]
        c1 = rng.choice(np.flatnonzero(h[:, u] & h[:, w]))
        v1 = u
        k = int(rng.integers(edges))  # the k-th edge in row-major order: row k // dc, its (k % dc)-th variable
        c2, v2 = k // dc, int(np.flatnonzero(h[k // dc])[k % dc])
        if c1 == c2 or v1 == v2 or h[c1, v2] or h[c2, v1]:
            continue
        before = _local_cycles(overlap, v1, v2)
        _move(h, overlap, c1, v1, v2)
        _move(h, overlap, c2, v2, v1)
        if _local_cycles(overlap, v1, v2) > before:  # undo a swap that adds 4-cycles
            _move(h, overlap, c2, v1, v2)
            _move(h, overlap, c1, v2, v1)
    return h


def regular_code(n: int = LDPC_CODE[0], dv: int = LDPC_CODE[1], dc: int = LDPC_CODE[2], seed: int = 0) -> TannerGraph:
    """The Tanner graph of a generated (dv, dc)-regular code of length n, 4-cycles removed where possible."""
    return TannerGraph.from_matrix(generate_regular(n, dv, dc, seed), source="generated", seed=seed)


def _without_repeated_edges(checks: np.ndarray, sockets: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Swap the variables of a repeated edge and a random edge until no (check, variable) pair repeats.

    A swap keeps every degree; one that would create another repeat is skipped.
    """
    sockets = sockets.copy()
    for _ in range(100 * sockets.size):
        pairs = checks * n + sockets
        _, inverse, counts = np.unique(pairs, return_inverse=True, return_counts=True)
        repeated = np.flatnonzero(counts[inverse] > 1)
        if repeated.size == 0:
            return sockets
        i, j = repeated[rng.integers(repeated.size)], rng.integers(sockets.size)
        if checks[i] == checks[j] or sockets[i] == sockets[j]:
            continue
        if np.isin([checks[i] * n + sockets[j], checks[j] * n + sockets[i]], pairs).any():
            continue
        sockets[i], sockets[j] = sockets[j], sockets[i]
    raise ValueError(f"could not draw a code of length {n} without repeated edges")


def _move(h: np.ndarray, overlap: np.ndarray, check: int, old: int, new: int) -> None:
    """Move check ``check``'s edge from variable ``old`` to ``new``, keeping ``overlap = H^T H`` current."""
    h[check, old] = 0
    others = np.flatnonzero(h[check])
    overlap[old, others] -= 1
    overlap[others, old] -= 1
    overlap[new, others] += 1
    overlap[others, new] += 1
    h[check, new] = 1


def _local_cycles(overlap: np.ndarray, a: int, b: int) -> int:
    """4-cycles through variable a or b (the only ones a swap between them can change)."""
    pairs = lambda row: int((row * (row - 1) // 2).sum())  # noqa: E731
    return pairs(overlap[a]) + pairs(overlap[b]) - int(overlap[a, b] * (overlap[a, b] - 1) // 2)


def read_alist(path: Path) -> np.ndarray:
    """MacKay's alist format: sizes, max degrees, degree lists, then 1-based neighbour lists."""
    text = path.read_text()
    tokens = [
        (int(t), line_no, col + 1) for line_no, line in enumerate(text.splitlines(), 1) for col, t in _words(line)
    ]
    pos = 0

    def take(what: str) -> tuple[int, int, int]:
        nonlocal pos
        if pos >= len(tokens):
            raise MatrixError(f"{path}:{len(text.splitlines()) or 1}:1: error: file ends before {what}")
        pos += 1
        return tokens[pos - 1]

    n, line, _ = take("the number of columns")
    m = take("the number of rows")[0]
    if (too_large := check_code_size(n, m)) is not None:
        raise MatrixError(f"{path}:{line}:1: error: {too_large}")
    take("the maximum column degree")
    take("the maximum row degree")
    col_deg = [take("the column degrees")[0] for _ in range(n)]
    [take("the row degrees") for _ in range(m)]
    h = np.zeros((m, n), dtype=np.uint8)
    for j in range(n):
        for _ in range(col_deg[j]):
            row, line, col = take(f"the neighbours of column {j + 1}")
            if not 1 <= row <= m:
                raise MatrixError(f"{path}:{line}:{col}: error: row index {row} outside 1..{m}")
            h[row - 1, j] = 1
    return h


def _words(line: str) -> list[tuple[int, str]]:
    out, col = [], 0
    for part in line.split():
        col = line.index(part, col)
        if not part.lstrip("-").isdigit():
            raise ValueError(part)
        out.append((col, part))
        col += len(part)
    return out


def read_matrix(path: Path) -> np.ndarray:
    """A parity-check matrix from a 0/1 text file (one row per line) or, for ``*.alist``, alist format."""
    try:
        if path.suffix == ".alist":
            try:
                return read_alist(path)
            except ValueError as exc:
                if isinstance(exc, MatrixError):
                    raise
                raise MatrixError(f"{path}:1:1: error: not an alist file (unexpected {exc})") from None
        rows = []
        lines = path.read_text().splitlines()
        for line_no, line in enumerate(lines, 1):
            bits = line.replace(",", " ").split()
            if not bits:
                continue
            if not rows and (too_large := check_code_size(len(bits), len(lines))) is not None:
                raise MatrixError(f"{path}:{line_no}:1: error: {too_large}")
            for col, bit in _words_any(line):
                if bit not in ("0", "1"):
                    raise MatrixError(f"{path}:{line_no}:{col + 1}: error: expected 0 or 1, got {bit!r}")
            if rows and len(bits) != len(rows[0]):
                raise MatrixError(f"{path}:{line_no}:1: error: row has {len(bits)} entries, expected {len(rows[0])}")
            rows.append([int(b) for b in bits])
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise MatrixError(f"{path}:1:1: error: cannot read matrix: {reason}") from None
    if not rows:
        raise MatrixError(f"{path}:1:1: error: empty matrix")
    return np.array(rows, dtype=np.uint8)


def _words_any(line: str) -> list[tuple[int, str]]:
    out, col = [], 0
    for part in line.replace(",", " ").split():
        col = line.index(part, col)
        out.append((col, part))
        col += len(part)
    return out


@dataclass
class TannerGraph:
    """Edge index arrays of a parity-check matrix, edges sorted by check then variable."""

    h: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def from_matrix(cls, h: np.ndarray, **meta: Any) -> TannerGraph:
        h = (np.asarray(h) % 2).astype(np.uint8)
        m, n = h.shape
        chk, var = np.nonzero(h)  # row-major: sorted by check, then variable
        edges = chk.size
        check_ptr = np.concatenate([[0], np.cumsum(np.bincount(chk, minlength=m))])
        var_order = np.lexsort((chk, var))  # edges grouped by variable
        var_ptr = np.concatenate([[0], np.cumsum(np.bincount(var, minlength=n))])
        arrays = {
            "edge_var": var.astype(np.int64),
            "edge_check": chk.astype(np.int64),
            "check_ptr": check_ptr.astype(np.int64),
            "var_order": var_order.astype(np.int64),
            "var_ptr": var_ptr.astype(np.int64),
        }
        arrays.update(_extrinsic("check", chk, np.arange(edges)))
        arrays.update(_extrinsic("var", var[var_order], var_order))
        degrees_v, degrees_c = h.sum(0), h.sum(1)
        info = {
            "n": n,
            "m": m,
            "edges": int(edges),
            "rank": gf2_rank(h),
            "four_cycles": four_cycles(h),
            "var_degrees": sorted(set(degrees_v.tolist())),
            "check_degrees": sorted(set(degrees_c.tolist())),
            **meta,
        }
        return cls(h, info, arrays)

    def summary(self) -> dict[str, Any]:
        return {**self.meta, "bytes": sum(int(a.nbytes) for a in self.arrays.values())}

    def save(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        save_file({"h": self.h, **self.arrays}, str(out / "arrays.safetensors"), metadata={"format": FORMAT})
        (out / "program.json").write_text(json.dumps({"format": FORMAT, **self.meta}, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> TannerGraph:
        """Read a graph saved by :meth:`save`; raises ValueError on anything else."""
        try:
            meta = json.loads((path / "program.json").read_text())
            if not isinstance(meta, dict) or meta.pop("format", None) != FORMAT:
                raise ValueError("not a compiled Tanner graph")
            arrays = load_file(str(path / "arrays.safetensors"))
            return cls(arrays.pop("h"), meta, arrays)
        except (OSError, ValueError, KeyError, TypeError, SafetensorError) as exc:
            raise ValueError(f"{path}: cannot load the Tanner graph ({type(exc).__name__}: {exc})") from None


def _extrinsic(side: str, node: np.ndarray, edge_ids: np.ndarray) -> dict[str, np.ndarray]:
    """For each edge, the other edges at the same ``side`` node (flat + CSR pointers by edge id)."""
    lists: dict[int, list[int]] = {}
    groups: dict[int, list[int]] = {}
    for nd, e in zip(node.tolist(), edge_ids.tolist(), strict=True):
        groups.setdefault(nd, []).append(e)
    for members in groups.values():
        for e in members:
            lists[e] = [o for o in members if o != e]
    total = len(edge_ids)
    counts = np.array([len(lists.get(e, [])) for e in range(total)], dtype=np.int64)
    flat = np.array([o for e in range(total) for o in lists.get(e, [])], dtype=np.int64)
    return {
        f"{side}_extrinsic": flat,
        f"{side}_extrinsic_ptr": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
    }


def null_space(h: np.ndarray) -> np.ndarray:
    """A basis (k, n) of the code {x : H x = 0 over GF(2)}: the rows generate every codeword."""
    a, pivots = _row_reduced(h)
    n = a.shape[1]
    chosen = set(pivots)
    free = [c for c in range(n) if c not in chosen]
    basis = np.zeros((len(free), n), dtype=np.uint8)
    for i, f in enumerate(free):  # free bit f set, pivot bits fixed by their rows
        basis[i, f] = 1
        basis[i, pivots] = a[: len(pivots), f]
    return basis


def _row_reduced(h: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Gauss-Jordan elimination over GF(2): the reduced 0/1 matrix and its pivot columns, in order."""
    a = (np.asarray(h) % 2).astype(np.uint8).copy()
    m, n = a.shape
    pivots: list[int] = []
    row = 0
    for col in range(n):
        hits = np.flatnonzero(a[row:, col]) + row if row < m else np.array([], dtype=int)
        if hits.size == 0:
            continue
        a[[row, hits[0]]] = a[[hits[0], row]]
        others = np.flatnonzero(a[:, col])
        others = others[others != row]
        a[others] ^= a[row]
        pivots.append(col)
        row += 1
    return a, pivots
