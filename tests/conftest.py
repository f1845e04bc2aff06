"""Suite-wide setup. typer's CliRunner converts the app into its click command on every invocation (0.08 s for
nlndl's 21 commands, several hundred times in the suite); the conversion depends on the app alone, so the
suite does it once per app. A typer without that step in its runner just runs uncached."""

import functools

import typer.testing

if callable(getattr(typer.testing, "_get_command", None)):
    typer.testing._get_command = functools.lru_cache(maxsize=None)(typer.testing._get_command)
