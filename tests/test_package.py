"""Packaging: one import root, explicit package list, layering rules."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for dotted, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([dotted, *rel.parts]))
    assert found == listed, f"unlisted: {found - listed}, missing: {listed - found}"


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True)


def test_generic_names_do_not_leak_into_site_packages():
    for name in ("compiler", "runtime"):
        result = run_python(f"import {name}")
        assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr


def test_compiler_never_imports_torch():
    result = run_python("import sys, nlndl.compiler; assert 'torch' not in sys.modules, 'torch imported'")
    assert result.returncode == 0, result.stderr


def test_loading_the_cli_imports_neither_torch_nor_the_compiler():
    """`nlndl --help` and option errors answer at once: each command imports what it needs when it runs."""
    script = "import sys, nlndl.cli; assert not {'torch', 'nlndl.compiler'} & set(sys.modules), sorted(sys.modules)"
    result = run_python(script)
    assert result.returncode == 0, result.stderr[-500:]


def test_cli_module_never_imports_click():
    for path in [p for folder in ("nlndl", "compiler", "runtime") for p in (ROOT / folder).rglob("*.py")]:
        text = path.read_text()
        assert "import click" not in text and "from click" not in text, path


def test_python_dash_m_works():
    result = subprocess.run([sys.executable, "-m", "nlndl", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("nlndl ")


def test_training_never_imports_torch_dynamo():
    """torch.optim imports torch._dynamo on first use (about 1 s); training uses runtime.adam instead."""
    sketch = Path(__file__).resolve().parents[1] / "examples/ilp/less_than/sketch.dl"
    script = (
        f"import sys; from nlndl import api; r = api.train({str(sketch)!r}, max_iters=20); "
        "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo imported'"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr


def test_cli_start_keeps_torch_unloaded_and_tunes_glibc_malloc():
    """`nlndl --version` stays fast (no torch import); the allocator tuning applies where glibc has mallopt."""
    script = (
        "import sys, platform; from nlndl.allocator import keep_freed_memory; "
        "ok = keep_freed_memory(); assert 'torch' not in sys.modules; "
        "assert ok == (sys.platform.startswith('linux') and platform.libc_ver()[0] == 'glibc'), ok"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr


def test_help_shows_flags_without_a_value_placeholder():
    """typer writes ``<bool>`` beside a flag, as if it took a value; every command's help shows them bare."""
    from typer.testing import CliRunner

    from nlndl.cli import app

    runner = CliRunner()
    for command in ([], ["train"], ["kg"], ["kg", "train"], ["bench", "kg"], ["bench", "scale"], ["ldpc", "train"]):
        result = runner.invoke(app, [*command, "--help"], terminal_width=200)
        assert result.exit_code == 0 and "--help" in result.output, command
        assert "<bool>" not in result.output, command
