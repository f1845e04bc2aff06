"""Located diagnostics, collected rather than thrown at the first problem.

Each renders as ``file:line:col: error: message``, the source line, and a caret under the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A source position: file name, 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    span: Span
    message: str
    severity: str = "error"

    def render(self, sources: dict[str, str]) -> str:
        head = f"{self.span}: {self.severity}: {self.message}"
        text = sources.get(self.span.file)
        if text is None:
            return head
        lines = text.splitlines()
        if not 1 <= self.span.line <= len(lines):
            return head
        source_line = lines[self.span.line - 1].expandtabs(1)
        return f"{head}\n{source_line}\n{' ' * (self.span.column - 1)}^"


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
        return [d.render(self.sources) for d in ordered]

    def render(self) -> str:
        parts = self._rendered(self.items)
        count = len(self.errors)
        parts.append(f"{count} error{'s' if count != 1 else ''} generated")
        return "\n".join(parts)


class CompileError(Exception):
    """Raised at the end of a stage that found errors; carries every diagnostic."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        super().__init__(diagnostics.render())
        self.diagnostics = diagnostics
