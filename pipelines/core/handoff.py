"""The check a collecting step makes before it reads the parts its mapped tasks wrote.

Mapped tasks hand their results over as files in the shared workspace, one per planned batch. A step
that globbed whatever files exist would silently shrink its result when a part was lost, written on
a worker whose disk it cannot see, or never written (a task marked success by hand): it checks the
folder holds exactly the planned parts and fails naming the missing and the unexpected ones, and
what to do about them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path


class IncompleteHandoff(RuntimeError):
    """Parts that were planned are missing, or parts that were not planned are there."""


def check_parts(
    what: str, planned: Mapping[Path, str], found: Iterable[Path], *, rerun: str
) -> None:
    """Raise IncompleteHandoff unless `found` is exactly the `planned` files.

    `planned` maps each expected file to the batch that writes it ("batch 100-199 (map index 1)");
    `what` names the step's input in the message; `rerun` says what to do for a missing part.
    """
    found = set(found)
    missing = [(path, batch) for path, batch in planned.items() if path not in found]
    extra = sorted(found - set(planned))
    if not missing and not extra:
        return
    lines = [f"{what}: {len(planned) - len(missing)} of the {len(planned)} planned parts are there"]
    if missing:
        lines.append(
            f"missing {len(missing)}: "
            + "; ".join(f"{batch} ({path.name})" for path, batch in missing)
        )
        lines.append(f"{rerun} for each missing batch, then this step again")
    if extra:
        lines.append(
            f"unexpected {len(extra)} the plan did not ask for: "
            + ", ".join(p.name for p in extra)
            + " (written by another plan: plan again, or remove them)"
        )
    lines.append(f"in {next(iter(planned), extra[0] if extra else Path('.')).parent}")
    raise IncompleteHandoff("\n".join(lines))


def batch_label(index: int, batch: tuple[int, int]) -> str:
    """How a message names a mapped batch: its rows, as the task's log says them, and its map index
    in the UI."""
    start, end = batch
    return f"batch {start}-{max(start, end - 1)} (map index {index})"
