"""Fill the (embedded) trace store with the demo traffic of the last days."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone

import sqlalchemy as sa

from pipelines.core.settings import Settings
from pipelines.stores.traces import TraceStore
from pipelines.traces.parse import Rejection, parse_row
from ragwatch_harness.demo.traces import generate_store_rows

NEW_TOPIC_DAYS, NEW_TOPIC_SHARE = 1, 0.3
"""Yesterday, 30 % of the demo's users ask about Python packaging, which the golden set does not
cover: the online eval's coverage falls and shows the topic (demo/traces.NEW_TOPIC)."""
DESIGNED_COVERAGE = 1 - NEW_TOPIC_SHARE
"""Yesterday's true coverage by design: the rest of the traffic asks about passages the golden set
holds (demo/reviewed.py)."""


def demo_traffic(*, days: int, per_day: int, seed: int, end: date) -> Iterator[dict]:
    """The demo's store rows of the `days` days up to `end`, whichever store they go to."""
    return generate_store_rows(
        days=days,
        per_day=per_day,
        end=end,
        seed=seed,
        new_topic_days=NEW_TOPIC_DAYS,
        new_topic_share=NEW_TOPIC_SHARE,
    )


def seed_demo_store(
    settings: Settings,
    *,
    days: int,
    per_day: int,
    seed: int,
    replace: bool,
    progress: Callable[[int], None] | None = None,
) -> dict:
    store = TraceStore.from_settings(settings, read_only=False)
    store.create_table()
    with store.engine.begin() as conn:
        existing = conn.execute(sa.select(sa.func.count()).select_from(store.table)).scalar_one()
        if existing and not replace:
            raise RuntimeError(
                f"the trace table already holds {existing:,} rows; pass --replace to reseed it"
            )
        if existing:
            conn.execute(sa.delete(store.table))

    today = datetime.now(timezone.utc).date()
    broken = 0
    # A typed timestamp column (PostgreSQL) cannot hold the malformed-timestamp rows a text one
    # (SQLite) can: the database would refuse the batch, so those rows are left out there.
    typed_ts = store.engine.dialect.name != "sqlite"

    def counted(rows: Iterator[dict]) -> Iterator[dict]:
        nonlocal broken
        for n, row in enumerate(rows, start=1):
            if typed_ts and isinstance(row["ts"], str):
                continue
            broken += isinstance(
                parse_row(row, max_field_chars=settings.max_field_chars), Rejection
            )
            if progress and n % 100 == 0:
                progress(n)
            yield row

    rows = demo_traffic(days=days, per_day=per_day, seed=seed, end=today)
    written = store.insert_rows(counted(rows))
    if progress:
        progress(written)
    return {
        "rows": written,
        "broken": broken,
        "first_day": (today - timedelta(days=days)).isoformat(),
        "last_day": (today - timedelta(days=1)).isoformat(),
        "store": store.engine.url.render_as_string(hide_password=True),
    }
