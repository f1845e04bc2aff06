"""Fuzzing: grammar-drawn and mutated sketches (and rules files) through `nlndl compile` and `nlndl check`
in-process. Every input must end in exit 0 or 1 with a message, never an exception. `nlndl bench fuzz`
runs the same generators for 10,000 inputs in a worker with a memory cap and a hang timer."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nlndl.bench import fuzz

ROOT = Path(__file__).resolve().parents[1]
CORPUS = fuzz.seed_sketches(ROOT / "examples" / "ilp")
INVOKE = fuzz._invoker("nlndl.cli:app")
SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _no_traceback(case: fuzz.Case, workdir: Path) -> None:
    outcome = fuzz.run_case(case, workdir, INVOKE)
    assert outcome["error"] is None, f"{outcome['error']}\n--- sketch ---\n{case.sketch}\n--- rules ---\n{case.rules}"
    assert set(outcome["codes"]) <= {0, 1}


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_grammar_drawn_sketches_never_traceback(seed, tmp_path):
    import random

    rng = random.Random(seed)
    case = fuzz.Case(fuzz.grammar_sketch(rng))
    if rng.random() < 0.3:
        case.rules = fuzz.mutate("lt(A, B) :- succ(A, B).\n", rng)
    _no_traceback(case, tmp_path)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, len(CORPUS) - 1))
def test_mutated_bundled_sketches_never_traceback(seed, which, tmp_path):
    import random

    rng = random.Random(seed)
    _no_traceback(fuzz.Case(fuzz.mutate(CORPUS[which], rng), origin="mutation"), tmp_path)


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_triple_directories_never_traceback_or_touch_a_users_files(seed, tmp_path):
    import random

    case = fuzz.kg_case(random.Random(seed))
    outcome = fuzz.run_case(case, tmp_path, INVOKE)
    assert outcome["error"] is None, f"{outcome['error']}\n--- target {case.target!r} {case.options} ---\n{case.graph}"
    assert set(outcome["codes"]) <= {0, 1, 2}


def test_the_stream_is_seeded():
    def drawn() -> list:
        return [
            (c.sketch, sorted((c.graph or {}).items())) for c, _ in zip(fuzz.cases(3, CORPUS), range(20), strict=False)
        ]

    first = drawn()
    assert first == drawn() and len({repr(f) for f in first}) > 15


def test_the_invoker_reports_escaped_exceptions_and_odd_exit_codes_and_reads_no_input():
    import typer
    from typer.main import get_command

    app = typer.Typer()

    @app.command()
    def run(what: str) -> None:
        if what == "crash":
            raise ValueError("escaped")
        if what == "odd":
            raise typer.Exit(3)
        if what == "read":
            typer.echo(input())
        typer.echo(what)

    command = get_command(app)
    code, exc = fuzz._run(command, ["crash"])
    assert code == 1 and isinstance(exc, ValueError)
    code, exc = fuzz._run(command, ["odd"])
    assert code == 3 and isinstance(exc, RuntimeError)
    assert fuzz._run(command, ["fine"]) == (0, None)
    assert fuzz._run(command, []) == (2, None), "a usage error"
    assert fuzz._run(command, ["read"]) == (1, None), (
        "stdin is empty (click aborts at its end), not pytest's or a terminal"
    )
