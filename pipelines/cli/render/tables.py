"""Tables that fit the terminal without cutting a name, and print plainly into a file or a pipe.

Rich shrinks every column of a table wider than the terminal, so at 80 columns "answer_correctness"
became "answe…". Here each column says what it holds: a name and a number are never cut, free text
folds. When even their narrowest widths do not fit, the table turns vertical: one block per row,
its name first, then `column: value` pairs. When the output is not a terminal (a log file, `| less`,
CI), the table has no box drawing and Rich writes no ANSI codes, so logs read and grep cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Kind = Literal["name", "number", "text"]
_FOLD_AT = 16
_UNBOUNDED = 10_000
"""A text column folds a longer word (a path, a model id) rather than push the table into its
vertical form."""


@dataclass(frozen=True)
class _Column:
    header: str
    kind: Kind


def _width(cell: str) -> int:
    return max((Text.from_markup(line).cell_len for line in cell.splitlines()), default=0)


def _longest_word(cell: str) -> int:
    return max((len(word) for word in Text.from_markup(cell).plain.split()), default=0)


def _packed(pairs: list[str], width: int) -> list[str]:
    """`pairs` joined by " · " into lines of at most `width` cells; a pair wider than that has a
    line to itself."""
    lines: list[str] = []
    for pair in pairs:
        if lines and Text.from_markup(f"{lines[-1]} · {pair}").cell_len <= width:
            lines[-1] = f"{lines[-1]} · {pair}"
        else:
            lines.append(pair)
    return lines


class ReadableTable:
    """A drop-in for the CLI's `rich.table.Table`: `add_column(header, kind)`, `add_row(*cells)`,
    `console.print`.

    Cells are Rich markup, as with a Rich table."""

    def __init__(
        self, title: str | None = None, *, show_header: bool = True, caption: str | None = None
    ) -> None:
        self.title, self.show_header, self.caption = title, show_header, caption
        self.columns: list[_Column] = []
        self.rows: list[tuple[str, ...]] = []

    def add_column(self, header: str, kind: Kind = "number") -> None:
        self.columns.append(_Column(header, kind))

    def add_row(self, *cells: str) -> None:
        self.rows.append(tuple(cells) + ("",) * (len(self.columns) - len(cells)))

    def min_widths(self) -> list[int]:
        """The narrowest each column can be: names and numbers whole, text folded at its longest
        word, headers wrapped between words."""
        widths = []
        for i, column in enumerate(self.columns):
            cells = [row[i] for row in self.rows]
            header = _longest_word(column.header) if self.show_header else 0
            if column.kind == "text":
                body = [min(_longest_word(c), _FOLD_AT) for c in cells]
            else:
                body = [_width(c) for c in cells]
            widths.append(max([header, *body, 1]))
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        grid = self._grid(console.is_terminal, options.max_width)
        # Rich measures a table's narrowest form from its columns' min_width, padding and box;
        # measured unbounded, since a measurement within the width is capped at the width.
        if (
            Measurement.get(console, options.update(width=_UNBOUNDED), grid).minimum
            <= options.max_width
        ):
            yield grid
        else:
            yield from self._vertical(console, options.max_width)

    def _grid(self, terminal: bool, max_width: int) -> Table:
        # A table narrower than its title would wrap the title ("filter\nfunnel"): as wide as the
        # title where the console allows it.
        title_width = min(_width(self.title), max_width) if self.title else None
        table = Table(
            title=self.title,
            min_width=title_width,
            caption=self.caption,
            show_header=self.show_header,
            box=box.SIMPLE_HEAD if terminal else None,
            show_edge=False,
            pad_edge=False,
            title_justify="left",
            caption_justify="left",
        )
        for column, min_width in zip(self.columns, self.min_widths()):
            if column.kind == "text":
                table.add_column(column.header, overflow="fold", min_width=min_width)
            else:  # names and numbers are read whole or not at all
                table.add_column(
                    column.header,
                    no_wrap=column.kind == "name",
                    min_width=min_width,
                    justify="right" if column.kind == "number" else "left",
                )
        for row in self.rows:
            table.add_row(*row)
        return table

    def _vertical(self, console: Console, width: int) -> RenderResult:
        """One block per row: its name cells on a line, then every other column as `header:
        value`."""
        if self.title:
            yield Text.from_markup(self.title, style="bold")
        names = [i for i, c in enumerate(self.columns) if c.kind == "name"] or [0]
        for row in self.rows:
            yield Text.from_markup(" · ".join(row[i] for i in names if row[i]) or "–")
            pairs = [
                f"{c.header}: {row[i]}" if self.show_header else row[i]
                for i, c in enumerate(self.columns)
                if i not in names and row[i]
            ]
            # Packed by hand: every line indented, a `column: value` pair never split across lines.
            for line in _packed(pairs, max(width - 2, 20)):
                yield Text("  ") + Text.from_markup(line)
        if self.caption:
            yield Text.from_markup(self.caption, style="dim")
