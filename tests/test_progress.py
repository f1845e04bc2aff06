"""Progress lines of a training run off a terminal: the time left, and the hint of a faster --subgraph."""

from types import SimpleNamespace

from nlndl.compiler import ground_sketch
from nlndl.compiler.subgraph import auto_entities
from nlndl.jobs.ilp import faster_subgraph
from nlndl.progress import training_bar


def state(iteration: int, seconds: float) -> SimpleNamespace:
    return SimpleNamespace(iteration=iteration, seconds=seconds, best_loss=0.5, replaced=0, renewed=0)


def lines(capsys, total: int, paces: list[tuple[int, float]], time_limit=None, faster="--subgraph 9 ...") -> str:  # noqa: ANN001
    with training_bar(total, 16, False, time_limit, faster) as progress:
        for iteration, seconds in paces:
            progress(state(iteration, seconds), None)
    return capsys.readouterr().err


def test_a_slow_whole_world_is_told_of_the_subgraph_once(capsys):
    err = lines(capsys, 4000, [(5, 10.0), (60, 30.0), (120, 60.0), (180, 90.0)])
    assert "iter 60/4000  best loss" in err and "33 min left at this pace" in err  # (4000 - 60) iterations at 0.5 s
    assert err.count("hint:") == 1
    assert "at 0.50 s an iteration on the whole world, the run takes up to 33 min; --subgraph 9 ..." in err
    bounded = lines(capsys, 4000, [(60, 30.0)], time_limit=3600)  # 2000 s of iterations, an hour allowed
    assert "the run takes up to 33 min;" in bounded
    bounded = lines(capsys, 4000, [(60, 30.0)], time_limit=900)  # the time limit ends it first
    assert "the run takes up to 15 min;" in bounded


def test_no_hint_where_the_run_is_quick_or_bounded_or_nothing_is_faster(capsys):
    assert "hint:" not in lines(capsys, 4000, [(3000, 30.0), (6000, 60.0)])  # 40 s in all
    assert "hint:" not in lines(capsys, 4000, [(60, 30.0)], time_limit=300)  # the user's limit: 5 min
    assert "hint:" not in lines(capsys, 4000, [(60, 30.0)], faster=None)
    assert "270 s left at this pace" in lines(capsys, 4000, [(60, 30.0)], time_limit=300)


def test_the_faster_subgraph_is_auto_s_size_where_the_world_is_larger(tmp_path):
    words = ["abcd", "bcda", "cdab", "dabc", "acbd", "bdac", "cadb", "dbca", "abdc", "badc"]
    lists = sorted({w[k:] for w in words for k in range(len(w))})
    facts = " ".join(f'cons("{w[0]}","{w[1:] or "nil"}","{w}").' for w in lists)
    text = (
        ".decl cons(h: symbol, t: symbol, l: symbol)\n.decl last(l: symbol, e: symbol)\n"
        f"{facts}\n.learn last(vars=4)\n.closed last\n" + " ".join(f'.pos last("{w}","{w[-1]}").' for w in lists) + "\n"
    )
    (tmp_path / "big.dl").write_text(text)
    grounded = ground_sketch(tmp_path / "big.dl")
    size = auto_entities(grounded.checked)
    assert faster_subgraph(grounded) == (
        f"--subgraph {size} trains on {size} of its 34 constants, grown from counterexamples until the rules hold "
        "on the whole world"
    )
    (tmp_path / "small.dl").write_text(
        '.decl e(a: symbol, b: symbol)\n.decl p(a: symbol, b: symbol)\ne("a","b").\n'
        '.learn p(vars=2)\n.pos p("a","b").\n'
    )
    assert faster_subgraph(ground_sketch(tmp_path / "small.dl")) is None
