"""Writes the list tasks in the cons/3 encoding: ``cons(Head, Tail, List)``, such as ``cons("a", "bc", "abc")``,
and ``empty("nil")``. A list is named by its letters, so the one-letter list "c" and the letter c are one
constant, as in list tasks written as words. Run from the repository root: ``python examples/ilp/list_tasks.py``;
it rewrites ``examples/ilp/list_<task>/sketch.dl``.
"""

from __future__ import annotations

from pathlib import Path

WORDS = ["abc", "bca", "cab", "dab", "abcd", "bd", "dcba", "ca", "ddc", "bad"]
NIL = "nil"
LISTS = [".decl cons(h: symbol, t: symbol, l: symbol)", ".decl empty(l: symbol)"]  # every task's background
HERE = Path(__file__).parent


def lists() -> list[str]:
    """Every word and every suffix of one, longest first (each list's tail is a list too)."""
    found = {w[i:] for w in WORDS for i in range(len(w))}
    return sorted(found, key=lambda w: (-len(w), w))


def q(name: str) -> str:
    return f'"{name}"'


def background(numbers: bool = False) -> list[str]:
    lines = [f"cons({q(w[0])},{q(w[1:] or NIL)},{q(w)})." for w in lists()]
    out = [" ".join(lines[i : i + 6]) for i in range(0, len(lines), 6)]
    out.append(f"empty({q(NIL)}).")
    if numbers:
        longest = max(len(w) for w in lists())
        out.append("zero(0). " + " ".join(f"succ({i},{i + 1})." for i in range(longest)))
    return out


def positives(head: str, atoms: list[tuple]) -> list[str]:
    text = [f".pos {head}({','.join(q(a) if isinstance(a, str) else str(a) for a in args)})." for args in atoms]
    return [" ".join(text[i : i + 6]) for i in range(0, len(text), 6)]


TASKS = {
    "list_last": (
        "List/Last in the cons/3 encoding: last(L, E) <=> E is the last element of the list L.",
        "4 variables, DNF of 4 terms, recursion",
        [*LISTS, ".decl last(l: symbol, e: symbol)"],
        ".learn last(vars=4)\n.closed last",
        lambda: positives("last", [(w, w[-1]) for w in lists()]),
        False,
    ),
    "list_member": (
        "List/Member in the cons/3 encoding: member(E, L) <=> E is an element of the list L.",
        "4 variables, DNF of 4 terms, recursion",
        [*LISTS, ".decl member(e: symbol, l: symbol)"],
        ".learn member(vars=4)\n.closed member",
        lambda: positives("member", sorted({(e, w) for w in lists() for e in w})),
        False,
    ),
    "list_suffix": (
        "List/Suffix in the cons/3 encoding: suffix(S, L) <=> S is a proper suffix of L (nil included).",
        "4 variables, DNF of 4 terms, recursion",
        [*LISTS, ".decl suffix(s: symbol, l: symbol)"],
        ".learn suffix(vars=4)\n.closed suffix",
        lambda: positives("suffix", sorted({(w[i:] or NIL, w) for w in lists() for i in range(1, len(w) + 1)})),
        False,
    ),
    "list_length": (
        "List/Length in the cons/3 encoding: len(L, N) <=> the list L has N elements (zero/succ numbers).",
        "5 variables, DNF of 4 terms, recursion",
        [
            *LISTS,
            ".decl zero(n: number)",
            ".decl succ(n: number, m: number)",
            ".decl len(l: symbol, n: number)",
        ],
        ".learn len(vars=5, types=[symbol, symbol, number])\n.closed len",
        lambda: positives("len", [(NIL, 0)] + [(w, len(w)) for w in lists()]),
        True,
    ),
}


def main() -> None:
    for name, (what, bias, decls, learn, pos, numbers) in TASKS.items():
        text = [f"// {what}", f"// Language bias: {bias}. Written by examples/ilp/list_tasks.py.", *decls]
        text += background(numbers) + learn.split("\n") + pos()
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        (folder / "sketch.dl").write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
