"""Located diagnostics, collected rather than thrown at the first problem.

Each renders as ``file:line:col: error: message``, the source line, and a caret under the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nlndl.errors import NlndlError

SHOWN = 60  # characters either side of the column, for a long source line
MAX_SHOWN = 50  # diagnostics rendered in full; the count covers the rest
BOM = "\ufeff"  # a leading byte-order mark, dropped by every text reader (as Soufflé and utf-8-sig do)


@dataclass(frozen=True)
class Span:
    """A source position: file name, 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def of_byte(cls, file: str, raw: bytes, offset: int) -> Span:
        """The line and column of byte ``offset`` of ``raw`` (where a UTF-8 decoding failed)."""
        return cls(file, raw.count(b"\n", 0, offset) + 1, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1)


@dataclass(frozen=True)
class Diagnostic:
    span: Span
    message: str
    severity: str = "error"

    def render(self, lines: list[str] | None) -> str:
        """The diagnostic, then its source line (``lines`` of its file; a long line shown around the column)
        and a caret."""
        head = f"{self.span}: {self.severity}: {self.message}"
        if lines is None or not 1 <= self.span.line <= len(lines):
            return head
        source_line = lines[self.span.line - 1].rstrip("\r").expandtabs(1)
        column = self.span.column - 1
        if len(source_line) > 2 * SHOWN:
            start = max(0, column - SHOWN)
            prefix = "..." if start else ""
            suffix = "..." if column + SHOWN < len(source_line) else ""
            source_line = prefix + source_line[start : column + SHOWN] + suffix
            column += len(prefix) - start
        return f"{head}\n{source_line}\n{' ' * column}^"


@dataclass
class Diagnostics:
    """The diagnostics of one compilation, with the source texts needed to show them."""

    items: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def error(self, span: Span, message: str) -> None:
        self.items.append(Diagnostic(span, message))

    def warning(self, span: Span, message: str) -> None:
        """A problem that does not stop compilation (the program may still not be learnable)."""
        self.items.append(Diagnostic(span, message, "warning"))

    def render_warnings(self) -> list[str]:
        """Each warning with its source line and caret, in source order."""
        return self._rendered([d for d in self.items if d.severity == "warning"])

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    def __bool__(self) -> bool:
        return bool(self.errors)

    def _rendered(self, items: list[Diagnostic]) -> list[str]:
        ordered = sorted(items, key=lambda d: (d.span.file, d.span.line, d.span.column, d.message))
        lines: dict[str, list[str] | None] = {}
        shown = []
        for d in ordered[:MAX_SHOWN]:
            if d.span.file not in lines:
                text = self.sources.get(d.span.file)
                lines[d.span.file] = None if text is None else text.split("\n")
            shown.append(d.render(lines[d.span.file]))
        if len(ordered) > MAX_SHOWN:
            shown.append(f"... and {len(ordered) - MAX_SHOWN} more")
        return shown

    def render(self) -> str:
        parts = self._rendered(self.items)
        count = len(self.errors)
        parts.append(f"{count} error{'s' if count != 1 else ''} generated")
        return "\n".join(parts)


class CompileError(NlndlError):
    """Raised at the end of a stage that found errors; carries every diagnostic."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        super().__init__(diagnostics.render())
        self.diagnostics = diagnostics


def size_text(n: int | float) -> str:
    """Bytes as B, KiB, MiB, GiB, TiB, PiB or EiB, for the estimates in refusals."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            return f"{int(n)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} EiB"


def clip(text: str, width: int = 24) -> str:
    """A long value shortened for a message, with its length."""
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"
