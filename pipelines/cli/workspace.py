"""`ragwatch workspace ...`: the data workspace (git + DVC) itself."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.cli.options import (
    current_settings,
)
from pipelines.cli.render.console import console, fail

app = typer.Typer(help="The data workspace (git + DVC) itself.", no_args_is_help=True)


@app.command("restore")
def workspace_restore(
    source: Annotated[
        str | None,
        typer.Argument(
            help="The data workspace's git history (a path or git URL) to clone into RAGWATCH_WORKSPACE first."
        ),
    ] = None,
) -> None:
    """Fetch every versioned trace partition and golden release of the data workspace from its DVC
    remote."""
    from pipelines.core.versioning import VersioningError, restore_workspace
    from pipelines.core.workspace import Workspace

    settings = current_settings()
    try:
        restored = restore_workspace(
            Workspace.from_settings(settings), settings.resolved_dvc_remote, source
        )
    except VersioningError as exc:
        fail(str(exc))
    console.print(f"restored {len(restored)} versioned folders into {settings.resolved_workspace}")
