"""Small published data for the tests: a day's trace partition, a staged golden set, a released one
with its passages and a person's questions, in their real formats."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.core.records import GoldenItem
from pipelines.core.workspace import Workspace
from pipelines.golden.dataset import write_items
from pipelines.stores.partitions import write_manifest


def write_promoted_partition(workspace: Workspace, day: date, rows: int = 20) -> Path:
    """A promoted partition of `day` (what `promote_trace_sample` leaves), relative to the
    workspace."""
    paths = workspace.traces_partition(day)
    paths.quarantine_part(0).parent.mkdir(parents=True)
    table = pa.table(
        {
            "trace_id": [f"{day}-{i}" for i in range(rows)],
            "question": [f"question {i} of {day}?" for i in range(rows)],
        }
    )
    pq.write_table(table, paths.part(0))
    pq.write_table(
        table.slice(0, 0).append_column("reason", pa.array([], pa.string())),
        paths.quarantine_part(0),
    )
    write_manifest(paths.manifest, {"day": day.isoformat(), "sampled": rows, "quarantined": 0})
    return workspace.relative(paths.root)


def write_staged_golden(workspace: Workspace, name: str, items: int = 6) -> list[GoldenItem]:
    """A staged golden set (what `split_golden` leaves for validation and release)."""
    p = workspace.golden(name)
    golden = [
        GoldenItem(
            item_id=f"item-{i}",
            question=f"question {i}?",
            reference_answer=f"answer {i}",
            qtype="single_hop",
            language="en",
            source="corpus",
            source_ref=f"doc.md#s/{i}",
            split="test" if i % 3 else "dev",
            generator_model="offline",
            corpus_version="corpus-1",
            created_at="2026-11-30",
        )
        for i in range(items)
    ]
    write_items(p.staged_items, golden)
    p.staged_rejected.write_text("")
    write_manifest(p.staged_manifest, {"name": name, "items": items, "corpus_version": "corpus-1"})
    return golden


# Seed passages of six documents: two generated questions each, and a third in a person's words.
PASSAGES = {
    "deploy.md#rollback": (
        "en",
        [
            "How do I roll back a deployment to the previous release?",
            "Which command reverts the last deploy?",
            "I shipped a broken version, how can I go back to the one before?",
        ],
    ),
    "deploy.md#rolling": (
        "en",
        [
            "How many pods are replaced at once during a rolling update?",
            "What is the maximum surge of a rolling update?",
            "When new code goes out, how many instances get swapped at the same time?",
        ],
    ),
    "deploy.md#env": (
        "en",
        [
            "How do I set environment variables for a service?",
            "Where are environment variables configured?",
            "What is the way to pass config values like API URLs into my app at runtime?",
        ],
    ),
    "billing.md#invoices": (
        "en",
        [
            "When are invoices issued each month?",
            "How do I download an invoice as PDF?",
            "Where can I get the bill for last month?",
        ],
    ),
    "billing.md#refunds": (
        "en",
        [
            "How do I request a refund for a duplicate charge?",
            "How long does a refund take to arrive?",
            "I was charged twice, how do I get my money back?",
        ],
    ),
    "billing.md#plans": (
        "en",
        [
            "How do I upgrade from the free plan to the team plan?",
            "What does the team plan cost per seat?",
            "How can I move my account to a bigger subscription?",
        ],
    ),
    "limits.md#rate": (
        "en",
        [
            "What is the API rate limit per minute?",
            "What happens when I exceed the rate limit?",
            "How many calls can my key make before requests start getting rejected?",
        ],
    ),
    "limits.md#storage": (
        "en",
        [
            "What is the maximum storage per project?",
            "How do I increase the storage quota of a project?",
            "My project is running out of disk space, can the cap be raised?",
        ],
    ),
    "auth.md#sso": (
        "en",
        [
            "How do I enable single sign-on with Okta?",
            "Which identity providers are supported for SSO?",
            "Can my team log in with our company Google accounts instead of passwords?",
        ],
    ),
    "auth.md#tokens": (
        "en",
        [
            "How do I rotate an API token?",
            "How long are API tokens valid?",
            "My access key leaked, how do I replace it with a new one?",
        ],
    ),
    "auth.md#mfa": (
        "en",
        [
            "How do I turn on two-factor authentication?",
            "Which authenticator apps work for 2FA?",
            "How can I add a second login step with a code from my phone?",
        ],
    ),
    "despliegue.md#revertir": (
        "es",
        [
            "¿Cómo revierto un despliegue a la versión anterior?",
            "¿Qué comando deshace el último despliegue?",
            "Publiqué una versión rota, ¿cómo vuelvo a la de antes?",
        ],
    ),
    "facturacion.md#reembolsos": (
        "es",
        [
            "¿Cómo pido el reembolso de un cobro duplicado?",
            "¿Cuánto tarda en llegar un reembolso?",
            "Me cobraron dos veces, ¿cómo recupero mi dinero?",
        ],
    ),
}


# The seed passages the golden items of tests/workspace_data.PASSAGES were written from.
PASSAGE_TEXTS = {
    "deploy.md#rollback": "A rollback restores the previous image tag recorded in the release history. Run `deploy "
    "rollback` to revert the last release; configuration is rolled back with the image.",
    "deploy.md#rolling": "Rolling updates replace one replica at a time and wait for the readiness probe. The maximum "
    "surge is one replica, so capacity never drops during a rollout.",
    "deploy.md#env": "Environment variables of a service are set in its service.yaml under `env:`, or with `deploy "
    "env set KEY=VALUE`; they are read when the container starts.",
    "billing.md#invoices": "Invoices are issued on the first day of each month and can be downloaded as PDF from the "
    "Billing page of the dashboard.",
    "billing.md#refunds": "Duplicate charges are refunded on request from the Billing page; a refund reaches the card "
    "in five to ten business days.",
    "billing.md#plans": "The team plan costs 12 dollars per seat and month. Upgrade from the free plan on the Plans "
    "page; the change applies at once.",
    "limits.md#rate": "Each API key may make 600 requests per minute. Requests beyond the rate limit get HTTP 429 "
    "with a Retry-After header.",
    "limits.md#storage": "A project may store up to 50 GB. Support raises the storage quota of a project on request.",
    "auth.md#sso": "Single sign-on works with Okta, Azure AD and Google Workspace identity providers, configured "
    "under Settings, Security.",
    "auth.md#tokens": "API tokens are valid for 90 days. Rotate a token from the Tokens page: the old one stops "
    "working after one hour.",
    "auth.md#mfa": "Two-factor authentication is turned on under Profile, Security, with any TOTP authenticator app "
    "such as Google Authenticator or 1Password.",
    "despliegue.md#revertir": "Para revertir un despliegue, `deploy rollback` restaura la imagen anterior del "
    "historial de versiones, con su configuración.",
    "facturacion.md#reembolsos": "Los cobros duplicados se reembolsan desde la página de facturación; el reembolso "
    "llega a la tarjeta en cinco a diez días hábiles.",
}


def golden_set(*, with_users: bool = True) -> list[GoldenItem]:
    """The seed passages' two generated questions each (source corpus) and, `with_users`, the third
    — a person's wording — as an imported item (source human): the user questions the threshold is
    calibrated on."""
    items = []
    for ref, (language, questions) in PASSAGES.items():
        for i, question in enumerate(questions if with_users else questions[:2]):
            items.append(
                GoldenItem(
                    item_id=f"{ref}-{i}",
                    question=question,
                    reference_answer="…",
                    qtype="single_hop",
                    language=language,
                    source="human" if i == 2 else "corpus",
                    source_ref=f"{ref}/0" if i < 2 else f"import.csv:{i}",
                    gold_chunk_ids=[f"{ref}/0"],
                    reference_contexts=[PASSAGE_TEXTS[ref]],
                    generator_model="test",
                    corpus_version="c1",
                    created_at="2026-11-01",
                )
            )
    return items


def release_golden(workspace: Workspace, name: str = "demo", **kwargs) -> None:
    paths = workspace.golden(name)
    write_items(paths.released_items, golden_set(**kwargs))
    write_manifest(paths.released_manifest, {"name": name, "version": "v1"})
