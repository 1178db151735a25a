"""The CLI reference page (reference/cli.md), generated at build time from the Typer app's command
tree.

It walks `pipelines.cli:app` as Click sees it (`list_commands` / `get_command`, so a package of
lazily imported command groups works as well as one module), at any depth. A command or an option
without help is a build warning, hence an error under `mkdocs build --strict` (`make docs`,
tests/unit/test_docs.py). So is a group of the harness (harness/pyproject.toml's entry points) that
the app lacks: the harness is not installed.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from markdown_text import cell, code
from reference_page import add_page

PAGE = "reference/cli.md"
HARNESS = Path(__file__).resolve().parents[2] / "harness" / "pyproject.toml"
log = logging.getLogger("mkdocs.plugins.ragwatch.cli_reference")


@dataclass(frozen=True)
class Parameter:
    names: str
    help: str  # what the code says; empty when it says nothing
    shown: str  # what `--help` prints: the help with the default, range or choices Click adds


@dataclass(frozen=True)
class Command:
    path: str
    usage: str
    help: str
    parameters: tuple[Parameter, ...]
    subcommands: tuple[str, ...]


def commands() -> Iterator[Command]:
    """Every command and group of the ragwatch CLI, depth first, in the order `--help` lists
    them."""
    import typer

    from pipelines.cli import app

    root = typer.main.get_command(app)
    yield from _walk(root, typer.Context(root, info_name="ragwatch"), typer)


def _walk(command, ctx, typer) -> Iterator[Command]:
    names = command.list_commands(ctx) if hasattr(command, "list_commands") else []
    yield Command(
        path=ctx.command_path,
        usage=command.get_usage(ctx).removeprefix("Usage: "),
        help=(command.help or "").strip(),
        parameters=tuple(_parameters(command, ctx)),
        subcommands=tuple(names),
    )
    for name in names:
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            yield from _walk(sub, typer.Context(sub, info_name=name, parent=ctx), typer)


def _parameters(command, ctx) -> Iterator[Parameter]:
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        own_help = (getattr(param, "help", None) or "").strip()
        if param.param_type_name == "option":
            record = param.get_help_record(ctx)
            if record:
                yield Parameter(record[0], own_help, record[1] or "")
        else:
            yield Parameter(param.metavar or param.name.upper(), own_help, own_help)


def missing_help(command: Command) -> list[str]:
    """The entries of one command that lack help: the command path itself, or `path --option`."""
    missing = [] if command.help else [command.path]
    missing += [
        f"{command.path} {p.names.split()[0].rstrip(',')}" for p in command.parameters if not p.help
    ]
    return missing


def render(all_commands: list[Command]) -> str:
    lines = [
        "# CLI",
        "",
        (
            "Generated from the `ragwatch` Typer app at build time: every command at every depth, with the help "
            "`ragwatch … --help` prints. Every command reads its configuration from the environment "
            "([Configuration](configuration.md))."
        ),
        "",
    ]
    for command in all_commands:
        depth = min(command.path.count(" ") + 2, 6)  # the page title is the only H1
        lines += [
            f"{'#' * depth} `{command.path}`",
            "",
            command.help or "*(no help yet)*",
            "",
            "```text",
            command.usage,
            "```",
            "",
        ]
        if command.subcommands:
            lines += [
                "Commands: " + ", ".join(f"`{name}`" for name in command.subcommands) + ".",
                "",
            ]
        if command.parameters:
            lines += ["| parameter | help |", "|---|---|"]
            lines += [
                f"| {code(p.names)} | {cell(p.shown) if p.help else '*(no help yet)* ' + cell(p.shown)} |"
                for p in command.parameters
            ]
            lines.append("")
    return "\n".join(lines)


def harness_groups() -> list[str]:
    """The command groups the harness registers: the names of its `ragwatch.commands` entry
    points."""
    from pipelines.cli.main import COMMANDS

    with HARNESS.open("rb") as file:
        return sorted(tomllib.load(file)["project"]["entry-points"][COMMANDS])


def problems(all_commands: list[Command]) -> list[str]:
    """One line per command or option without help, and per harness group the app lacks."""
    paths = {command.path for command in all_commands}
    return [
        f"CLI reference: {entry!r} has no help text: give it a docstring or help="
        for command in all_commands
        for entry in missing_help(command)
    ] + [
        f"CLI reference: `ragwatch {group}` is missing: install the harness (`make install`), whose entry points add it"
        for group in harness_groups()
        if f"ragwatch {group}" not in paths
    ]


def on_files(files, config):
    all_commands = list(commands())
    return add_page(files, config, PAGE, render(all_commands), problems(all_commands), log)
