"""``nlndl bench boolean`` end to end on a tiny configuration."""

import json

from typer.testing import CliRunner

from nlndl.cli import app

runner = CliRunner()


def test_bench_boolean_writes_json_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    args = [
        "bench",
        "boolean",
        "--quick",
        "--seeds",
        "1",
        "--dnf-steps",
        "40",
        "--xor-steps",
        "40",
        "--json",
        str(out),
        "--plot",
        str(png),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert {"dnf", "xor"} <= data.keys()
    for row in data["dnf"]:
        assert {"p", "model", "seed", "final_test_errors", "first_zero_step", "curve"} <= row.keys()
    for row in data["xor"]:
        assert {"n", "model", "seed", "final_bit_error", "curve"} <= row.keys()
    assert {r["model"] for r in data["dnf"]} == {"nln", "mlp"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_same_seed_same_result(tmp_path):
    outs = []
    for name in ("a.json", "b.json"):
        path = tmp_path / name
        args = [
            "bench",
            "boolean",
            "--quick",
            "--seeds",
            "1",
            "--dnf-steps",
            "30",
            "--xor-steps",
            "30",
            "--json",
            str(path),
        ]
        assert runner.invoke(app, args).exit_code == 0
        data = json.loads(path.read_text())
        outs.append([(r["curve"], r.get("formula")) for r in data["dnf"] + data["xor"]])
    assert outs[0] == outs[1]


def test_unwritable_output_fails_before_running(tmp_path):
    result = runner.invoke(app, ["bench", "boolean", "--json", str(tmp_path / "missing" / "r.json")])
    assert result.exit_code == 1
    assert "does not exist" in result.output


def test_usage_error_exits_2():
    assert runner.invoke(app, ["bench", "boolean", "--seeds", "0"]).exit_code == 2
    assert runner.invoke(app, ["no-such-verb"]).exit_code == 2


def test_bench_startup_times_train_beside_the_import_floor(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the bundled sketches are found from any directory
    out = tmp_path / "startup.json"
    result = runner.invoke(
        app, ["bench", "startup", "--tasks", "less_than", "--repeats", "1", "--record", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(out.read_text())["rows"]
    assert row["task"] == "less_than" and row["solved"]
    assert row["train_median"] > 0 and row["floor_median"] > 0
    assert abs(row["ratio"] - row["train_median"] / row["floor_median"]) < 1e-9
    assert "| less_than |" in result.output
    missing = runner.invoke(app, ["bench", "startup", "--tasks", "nothing_here"])
    assert missing.exit_code == 1 and "nothing_here" in missing.output


def test_bench_startup_says_when_every_run_compiles_nlndl_again():
    from nlndl.bench import startup

    report = {"repeats": 1, "rows": [], "bytecode_cache": False}
    assert "PYTHONDONTWRITEBYTECODE" in startup.markdown(report)
    assert "PYTHONDONTWRITEBYTECODE" not in startup.markdown({**report, "bytecode_cache": True})


def test_bench_startup_knows_a_module_compiled_from_its_source_as_it_is(tmp_path):
    import os
    import py_compile

    from nlndl.bench.startup import compiled

    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    assert not compiled(source)
    py_compile.compile(str(source), doraise=True)
    assert compiled(source)
    source.write_text("x = 22\n")  # edited: the compiled file is stale
    os.utime(source, (source.stat().st_atime, source.stat().st_mtime + 5))
    assert not compiled(source)
