"""Index arrays against brute force; pruning soundness; save/load; memory refusal."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlndl.compiler import CompileError, compile_sketch
from nlndl.compiler.crisp import BodyAtom, Rule, evaluate
from nlndl.compiler.ir import CompiledProgram, InputAtom
from nlndl.compiler.lowering import index_bytes

TINY = """
.type N <: symbol
.decl e(a: N, b: N)
.decl p(a: N, b: N)
e("x","y"). e("y","z").
.learn p(vars=3, prune={prune})
.pos p("x","z").
.neg p("z","x").
"""


def compile_text(tmp_path: Path, text: str, **kw) -> CompiledProgram:
    path = tmp_path / "s.dl"
    path.write_text(text)
    return compile_sketch(path, **kw)


def test_index_arrays_match_brute_force(tmp_path):
    program = compile_text(tmp_path, TINY.format(prune="none"))
    world, ir = program.worlds[0], program.learned["p"]
    dom = world.domains["N"]
    assert len(dom) == 3
    expected = []
    for theta in itertools.product(range(3), repeat=3):
        gather = tuple(world.atom_slot(a.predicate, tuple(theta[v] for v in a.vars)) for a in ir.inputs)
        expected.append((world.atom_slot("p", theta[:2]), gather))
    got = list(zip(world.scatter("p").tolist(), map(tuple, world.gather("p").tolist()), strict=True))
    assert sorted(got) == sorted(expected)
    assert world.scatter("p").tolist() == sorted(world.scatter("p").tolist()), "head-sorted"
    ptr = world.pointers("p")
    for local in range(world.layout["p"].size):
        rows = world.scatter("p")[ptr[local] : ptr[local + 1]]
        assert (rows == world.layout["p"].offset + local).all()
    # Terms(q, V): every well-typed atom over A, B, C except the head p(A,B)
    assert len(ir.inputs) == 9 + 8
    assert InputAtom("p", (0, 1)) not in ir.inputs


def test_examples_and_valuation(tmp_path):
    program = compile_text(tmp_path, TINY.format(prune="extensional"))
    world = program.worlds[0]
    symbols = program.symbols
    true_atoms = {world.decode_slot(int(s)) for s in np.flatnonzero(world.valuation)}
    assert {(r, tuple(symbols[c] for c in args)) for r, args in true_atoms} == {("e", ("x", "y")), ("e", ("y", "z"))}
    labels = {
        world.decode_slot(int(s)): bool(v) for s, v in zip(world.example_slots, world.example_labels, strict=True)
    }
    named = {tuple(symbols[c] for c in args): v for (_, args), v in labels.items()}
    assert named == {("x", "z"): True, ("z", "x"): False}


def test_save_load_round_trip(tmp_path):
    program = compile_text(tmp_path, TINY.format(prune="extensional"))
    program.save(tmp_path / "out")
    loaded = CompiledProgram.load(tmp_path / "out")
    assert loaded.summary() == program.summary()
    assert loaded.learned == program.learned
    for a, b in zip(program.worlds, loaded.worlds, strict=True):
        assert a.arrays.keys() == b.arrays.keys()
        for key in a.arrays:
            assert np.array_equal(a.arrays[key], b.arrays[key]) and a.arrays[key].dtype == b.arrays[key].dtype
    assert len(loaded.sketch_hash) == 64 and loaded.version
    assert not list((tmp_path / "out").glob("*.pkl"))


def test_auto_prunes_only_large_grids(tmp_path, monkeypatch):
    """prune=auto keeps every substitution of a small grid, and prunes past PRUNE_ABOVE."""
    from nlndl.compiler import lowering

    text = TINY.format(prune="auto")
    small = compile_text(tmp_path, text)
    assert small.worlds[0].pruned["p"] == 0 and not small.learned["p"].pruned
    monkeypatch.setattr(lowering, "PRUNE_ABOVE", 26)  # the grid is 3 x 3 x 3 = 27
    large = compile_text(tmp_path, text)
    pruned = compile_text(tmp_path, TINY.format(prune="extensional"))
    assert large.learned["p"].pruned and large.worlds[0].pruned["p"] == pruned.worlds[0].pruned["p"] > 0


def test_load_rejects_other_directories(tmp_path):
    with pytest.raises(ValueError):
        CompiledProgram.load(tmp_path)


def test_memory_limit_refuses_with_estimate(tmp_path):
    # 32 constants: the index arrays (32^3 substitutions) outgrow the parse and the valuation estimates
    chain = " ".join(f'e("c{i}","c{i + 1}").' for i in range(30))
    with pytest.raises(CompileError) as info:
        compile_text(tmp_path, TINY.format(prune="none") + chain + "\n", memory_limit=2**20)
    message = info.value.diagnostics.render()
    assert "s.dl:6:8: error: the index arrays would take" in message and "--memory-limit" in message


def test_closed_world_adds_negatives(tmp_path):
    text = TINY.format(prune="extensional").replace(".neg", "// ") + ".closed p\n"
    world = compile_text(tmp_path, text).worlds[0]
    assert world.example_slots.size == 9 and world.example_labels.sum() == 1


def test_default_steps(tmp_path):
    recursive = compile_text(tmp_path, TINY.format(prune="none"))
    assert recursive.steps == 1 + (3 - 1)
    flat = compile_text(tmp_path, TINY.format(prune="none").replace("vars=3,", "vars=3, body=[e],"))
    assert flat.steps == 1
    fixed = compile_text(tmp_path, TINY.format(prune="none") + ".steps 7\n")
    assert fixed.steps == 7


def test_default_steps_follow_the_longest_chain_of_facts(tmp_path):
    # constants that no chain links do not lengthen T: e walks x -> y -> z, q names five more
    text = TINY.format(prune="none") + '.decl q(a: N)\nq("a"). q("b"). q("c"). q("d"). q("f").\n'
    assert compile_text(tmp_path, text).steps == 1 + 2
    # a cycle over n constants counts n links: x back to itself walks all three
    assert compile_text(tmp_path, text + 'e("z","x").\n').steps == 1 + 3
    # a cyclic relation counts its longest shortest path, not its n - 1: a ring of 30 with a hub joined
    # both ways to every node reaches any node from any other in at most 2 links
    ring = "".join(f'e("r{k}","r{(k + 1) % 30}"). e("hub","r{k}"). e("r{k}","hub").\n' for k in range(30))
    assert compile_text(tmp_path, text + ring).steps == 1 + 2
    # a ternary relation's chain runs through any pair of its argument positions
    ternary = text + '.decl t(a: N, b: N, c: N)\nt("a","q","b"). t("b","q","c"). t("c","q","d"). t("d","q","f").\n'
    assert compile_text(tmp_path, ternary).steps == 1 + 4


def test_worlds_get_their_own_domains(tmp_path):
    text = """
.decl e(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
.learn p(vars=2)
.world one { e("a","b"). .pos p("a","b"). }
.world two { e("c","d"). e("d","f"). .pos p("c","d"). .neg p("d","c"). }
"""
    program = compile_text(tmp_path, text)
    assert [w.name for w in program.worlds] == ["one", "two"]
    assert [len(w.domains["symbol"]) for w in program.worlds] == [2, 3]


# --- pruning soundness: a rule that obeys the stated assumption derives the same atoms through the
# pruned index arrays as through brute-force evaluation (the crisp evaluator) ---

CONSTS = ["a", "b", "c"]


@st.composite
def rule_body(draw):
    atoms = []
    for _ in range(draw(st.integers(1, 3))):
        pred = draw(st.sampled_from(["e", "f", "p"]))
        arity = 1 if pred == "f" else 2
        atoms.append((pred, tuple(draw(st.integers(0, 2)) for _ in range(arity))))
    atoms = [a for a in atoms if a != ("p", (0, 1))]  # the head atom is not a candidate body atom
    # the stated assumption: the extra variable C (index 2) occurs in a positive extensional atom that binds it
    # (e(C, C) does not), or not at all
    if any(2 in v for _, v in atoms) and not any(InputAtom(p, v).binds(2) for p, v in atoms if p != "p"):
        atoms.append(("e", (2, draw(st.integers(0, 2)))))
    # a safe rule: both head variables occur in the body
    for head_var in (0, 1):
        if not any(head_var in v for _, v in atoms):
            atoms.append(("e", (head_var, head_var)))
    return atoms


@st.composite
def programs(draw):
    facts = {
        "e": set(draw(st.lists(st.tuples(*[st.sampled_from(range(3))] * 2), max_size=6))),
        "f": set(draw(st.lists(st.tuples(st.sampled_from(range(3))), max_size=3))),
    }
    return facts, draw(st.lists(rule_body(), min_size=1, max_size=3))


def sketch_text(facts):
    lines = [".decl e(a: symbol, b: symbol)", ".decl f(a: symbol)", ".decl p(a: symbol, b: symbol)"]
    lines += [f'e("{CONSTS[x]}","{CONSTS[y]}").' for x, y in sorted(facts["e"])]
    lines += [f'f("{CONSTS[x]}").' for (x,) in sorted(facts["f"])]
    lines += [f'f("{c}") :- f("{c}").' for c in CONSTS]  # mention every constant without adding facts
    lines += [".learn p(vars=3, prune=extensional)", '.pos p("a","b").']
    return "\n".join(lines) + "\n"


def fixpoint_through_index(program, bodies):
    """Crisp forward chaining of the rules p(A,B) :- body, run through the compiled index arrays."""
    world, ir = program.worlds[0], program.learned["p"]
    columns = [[ir.inputs.index(InputAtom(p, v)) for p, v in body] for body in bodies]
    values = world.valuation.copy() > 0
    gather, scatter = world.gather("p"), world.scatter("p")
    while True:
        new = values.copy()
        for cols in columns:
            new[scatter[values[gather[:, cols]].all(axis=1)]] = True
        if (new == values).all():
            break
        values = new
    p = world.layout["p"]
    return {world.decode_slot(s)[1] for s in range(p.offset, p.offset + p.size) if values[s]}


@settings(max_examples=60, deadline=None)
@given(programs())
def test_pruning_never_drops_a_needed_substitution(tmp_path_factory, case):
    facts, bodies = case
    tmp = tmp_path_factory.mktemp("prune")
    path = tmp / "s.dl"
    path.write_text(sketch_text(facts))
    program = compile_sketch(path)
    ids = {v: i for i, v in enumerate(program.symbols)}
    var = lambda i: ("v", "ABC"[i])  # noqa: E731
    rules = [
        Rule("p", (var(0), var(1)), tuple(BodyAtom(p, tuple(var(i) for i in vs)) for p, vs in body)) for body in bodies
    ]
    facts_by_id = {
        "e": {(ids[CONSTS[x]], ids[CONSTS[y]]) for x, y in facts["e"]},
        "f": {(ids[CONSTS[x]],) for (x,) in facts["f"]},
    }
    assert fixpoint_through_index(program, bodies) == evaluate(facts_by_id, rules)["p"]


SAME = """
.decl e(a: symbol, b: symbol)
.decl same(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
e("a","b"). e("b","c"). e("c","d"). e("d","f").
{same}
.learn p(vars=3, negation)
.pos p("a","c").
.closed p
"""


def test_a_reflexive_helper_binds_no_extra_variable(tmp_path):
    """same(C, C) holds for every constant (the inequality idiom's helper): were it counted as binding C, the
    helper would keep every substitution. Pruning counts only e's atoms, as without the helper."""
    program = compile_text(tmp_path, SAME.format(same="same(X, X) :- e(X, _).\nsame(X, X) :- e(_, X)."))
    ir = program.learned["p"]
    assert InputAtom("same", (2, 2)) in ir.inputs and ir.pruned
    world = program.worlds[0]
    constants = [program.symbols[c] for c in world.domains["symbol"]]
    edges = {("a", "b"), ("b", "c"), ("c", "d"), ("d", "f")}
    # C is bound by an e atom with A or B, by same(A, C) or
    # same(B, C) where C is A or B, or is the first constant; never by same(C, C), which holds for all five
    kept = sum(
        c == constants[0] or c in (a, b) or any({(x, c), (c, x)} & edges for x in (a, b))
        for a, b, c in itertools.product(constants, repeat=3)
    )
    assert world.substitutions["p"] == kept < 5**3
    assert not InputAtom("same", (2, 2)).binds(2) and not InputAtom("e", (2, 2)).binds(2)
    assert InputAtom("e", (0, 2)).binds(2) and InputAtom("f", (2,)).binds(2) and not InputAtom("e", (0, 1)).binds(2)


def test_function_terms_gather_their_values():
    program = compile_sketch(Path(__file__).parent / "sketches" / "functions.dl")
    world, ir = program.worlds[0], program.learned["sorted"]
    symbols = program.symbols
    column = ir.inputs.index(InputAtom("sorted", (0,), ("init",)))
    false_slot = world.atoms - 1
    assert world.valuation[false_slot] == 0
    init = {"ab": "a", "ba": "b", "abc": "ab", "acb": "ac", "ac": "a"}
    for head, slot in zip(world.scatter("sorted"), world.gather("sorted")[:, column], strict=True):
        (value,) = (symbols[c] for c in world.decode_slot(int(head))[1])
        if value in init:
            assert symbols[world.decode_slot(int(slot))[1][0]] == init[value]
        else:  # init("a") is undefined: the atom reads the always-false slot
            assert slot == false_slot


def test_function_directive_errors(tmp_path):
    text = """
.decl r(a: symbol, b: symbol, c: symbol)
.decl p(a: symbol)
.function r, nope
.learn p(functions=[r, p])
.pos p("x").
"""
    with pytest.raises(CompileError) as info:
        compile_text(tmp_path, text)
    message = info.value.diagnostics.render()
    assert "s.dl:4:11: error: .function r: a function relation has two attributes" in message
    assert "s.dl:4:14: error: undeclared relation nope in .function" in message
    assert "error: p is not declared with '.function p'" in message


UNREAD = """
.type N <: symbol
.decl e(a: N, b: N)
.decl p(a: N, b: N)
e("x","y"). e("y","z"). e("z","w").
.learn p(vars=3, body=[e])
.pos p("x","z").
.neg p("z","x"). .neg p("x","y").
"""


def test_an_unread_predicate_keeps_only_its_example_heads(tmp_path, monkeypatch):
    """p reads only e and nothing reads p: the substitutions of its non-example atoms are not compiled,
    and the training loss is the same as with every substitution."""
    import torch

    from nlndl.compiler import lowering
    from nlndl.runtime.chain import ChainConfig, ForwardChainer

    program = compile_text(tmp_path, UNREAD)
    world = program.worlds[0]
    assert set(world.scatter("p").tolist()) == set(world.example_slots.tolist())
    assert world.substitutions["p"] < 4**3
    recursive = compile_text(tmp_path, UNREAD.replace("body=[e]", "body=[e, p]"))
    assert len(set(recursive.worlds[0].scatter("p").tolist())) == 16, "read by itself: every head atom"

    full_kept = lowering.Lowering.kept
    monkeypatch.setattr(lowering.Lowering, "kept", lambda self, heads=None, memory_limit=2**62: full_kept(self))
    full = compile_text(tmp_path, UNREAD)
    assert len(set(full.worlds[0].scatter("p").tolist())) == 16
    losses = []
    for prog in (program, full):
        torch.manual_seed(0)
        losses.append(ForwardChainer(prog, ChainConfig(restarts=4)).losses())
    assert torch.allclose(losses[0], losses[1])


def test_pruned_flag_is_per_predicate_across_worlds(tmp_path):
    # world b's facts bind every extra variable, so b (the last world) prunes nothing; a prunes some.
    # The predicate's flag (which keeps the safety gate on) must still say it was pruned.
    text = """
.decl e(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
.learn p(vars=3, prune=extensional)
.world a { e("x","y"). e("y","z"). e("z","w"). .pos p("x","z"). }
.world b { e("u","u"). e("u","v"). e("v","u"). e("v","v"). .pos p("u","v"). }
"""
    program = compile_text(tmp_path, text)
    a, b = program.worlds
    assert a.pruned["p"] > 0 and b.pruned["p"] == 0
    assert program.learned["p"].pruned is True


def test_the_index_array_estimate_is_within_a_factor_2_of_the_arrays_built():
    root = Path(__file__).resolve().parents[1] / "examples" / "ilp"
    for sketch in sorted(root.rglob("sketch.dl")):
        program = compile_sketch(sketch)
        for world in program.worlds:
            for p, ir in program.learned.items():
                built = sum(int(world.arrays[f"{p}/{k}"].nbytes) for k in ("gather", "scatter", "ptr", "grid"))
                estimate = index_bytes(world.substitutions[p], len(ir.inputs))
                assert estimate <= built <= 2 * estimate or world.substitutions[p] == 0, (sketch, p)


def test_a_sketch_given_as_text_compiles_as_its_file_does(tmp_path):
    from nlndl.compiler import SketchText

    text = ".type N <: symbol\n.decl e(a: N, b: N)\n.input e\n.decl p(a: N, b: N)\n.learn p(vars=3)\n"
    text += '.pos p("x","z").\n.neg p("z","x").\n'
    facts = "x\ty\ny\tz\n"
    (tmp_path / "e.facts").write_text(facts)
    from_file = compile_text(tmp_path, text)
    in_memory = compile_sketch(SketchText(text, "<mine>", {"e": facts}))
    assert from_file.symbols == in_memory.symbols
    for a, b in zip(from_file.worlds, in_memory.worlds, strict=True):
        assert sorted(a.arrays) == sorted(b.arrays)
        assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
    with pytest.raises(CompileError) as bad:
        compile_sketch(SketchText(text, "<mine>", {"e": "x\ty\nz\n"}))
    assert "<mine>#e.facts:2:1: error: expected 2 tab-separated fields, got 1" in bad.value.diagnostics.render()


def test_a_parsed_sketch_compiles_as_its_file_does_and_is_left_as_it_was(tmp_path):
    """compile_sketch takes an ast.Sketch: the same arrays as the file, background rules added to a copy."""
    from nlndl.compiler.parser import parse_file

    text = ".type N <: symbol\n.decl e(a: N, b: N)\n.decl q(a: N, b: N)\n.decl p(a: N, b: N)\n.learn p(vars=3)\n"
    text += 'e("x","y"). e("y","z").\n.pos p("x","z").\n.neg p("z","x").\n'
    (tmp_path / "s.dl").write_text(text)
    (tmp_path / "bg.dl").write_text(
        ".type N <: symbol\n.decl e(a: N, b: N)\n.decl q(a: N, b: N)\nq(A, B) :- e(B, A).\n"
    )
    parsed = parse_file(tmp_path / "s.dl")
    clauses = list(parsed.worlds[0].clauses)
    for background in ((), (tmp_path / "bg.dl",)):
        from_file = compile_sketch(tmp_path / "s.dl", background=background)
        from_ast = compile_sketch(parsed, background=background)
        assert from_file.symbols == from_ast.symbols and from_file.learned.keys() == from_ast.learned.keys()
        for a, b in zip(from_file.worlds, from_ast.worlds, strict=True):
            assert sorted(a.arrays) == sorted(b.arrays)
            assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
    assert parsed.worlds[0].clauses == clauses  # the background went into a copy


REPEATS = """
.decl t(a: symbol, b: symbol, c: symbol)
.decl e(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
t("x","x","y"). e("x","y").
.learn p(vars=3{repeat})
.pos p("x","y").
"""


@pytest.mark.parametrize(
    ("repeat", "ternary", "binary"),
    [("", 3 * 2 * 1, 9), (", repeat=binary", 3 * 2 * 1, 9), (", repeat=all", 27, 9), (", norepeat", 6, 6)],
)
def test_repeated_variables_are_candidates_in_binary_atoms_unless_asked(tmp_path, repeat, ternary, binary):
    """By default only atoms of at most two arguments may repeat a variable (e(A,A) stays, t(A,B,A) goes);
    repeat=all keeps every atom, norepeat (repeat=none) none that repeats one."""
    program = compile_text(tmp_path, REPEATS.format(repeat=repeat))
    inputs = program.learned["p"].inputs
    assert sum(a.predicate == "t" for a in inputs) == ternary
    assert sum(a.predicate == "e" for a in inputs) == binary
    assert sum(a.predicate == "p" for a in inputs) == (9 if "norepeat" not in repeat else 6) - 1  # not its head
    assert program.learned["p"].repeats_left_out == 27 - ternary + (9 - binary) * 2


def test_an_unknown_repeat_mode_is_located(tmp_path):
    with pytest.raises(CompileError) as info:
        compile_text(tmp_path, REPEATS.format(repeat=", repeat=twice"))
    assert "s.dl:6:18: error: 'repeat' must be one of binary, all, none" in info.value.diagnostics.render()
