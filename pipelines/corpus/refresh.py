"""Tell Airflow the corpus changed: an external asset event on the `ragwatch_corpus` asset.

Airflow 3's public API wants a JWT from the auth manager (`POST /auth/token`, simple auth manager
and FAB alike) and the asset's integer id, which only `GET /api/v2/assets` knows. Asset-triggered
DAGs then run with the event's `extra` (corpus version and counts) in their context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from pipelines.core.settings import Settings

ASSET_NAME = "ragwatch_corpus"
PAGE = 100


class AirflowNotificationError(RuntimeError):
    pass


def notify_corpus_refreshed(
    settings: Settings,
    asset_name: str = ASSET_NAME,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Create an asset event for `asset_name`; returns Airflow's event record.

    `extra` is typically `IndexReport.summary()`: corpus_version, documents added/removed...
    """
    base_url = settings.airflow_api_url.rstrip("/")
    with httpx.Client(base_url=base_url, timeout=30.0) as client:
        headers = {"Authorization": f"Bearer {_token(client, settings)}"}
        asset_id = _asset_id(client, headers, asset_name, base_url)
        response = _call(
            client,
            "POST",
            "/api/v2/assets/events",
            base_url,
            headers=headers,
            json={"asset_id": asset_id, "extra": dict(extra or {})},
        )
        if response.is_error:
            raise AirflowNotificationError(
                f"Airflow refused the asset event for {asset_name!r} (id {asset_id}): "
                f"{response.status_code} {response.text[:300]}"
            )
        return response.json()


def _token(client: httpx.Client, settings: Settings) -> str:
    base_url = settings.airflow_api_url.rstrip("/")
    if settings.airflow_username:
        password = settings.airflow_password.get_secret_value() if settings.airflow_password else ""
        response = _call(
            client,
            "POST",
            "/auth/token",
            base_url,
            json={"username": settings.airflow_username, "password": password},
        )
        who = f"user {settings.airflow_username!r} (RAGWATCH_AIRFLOW_USERNAME / RAGWATCH_AIRFLOW_PASSWORD)"
    else:
        # Simple auth manager with `simple_auth_manager_all_admins = True` hands out tokens freely.
        response = _call(client, "GET", "/auth/token", base_url)
        who = "no credentials: set RAGWATCH_AIRFLOW_USERNAME and RAGWATCH_AIRFLOW_PASSWORD"
    if response.status_code == 404:
        raise AirflowNotificationError(
            f"{base_url}/auth/token does not exist: RAGWATCH_AIRFLOW_API_URL must be the Airflow 3 API server"
        )
    if response.is_error:
        raise AirflowNotificationError(
            f"Airflow at {base_url} refused a token for {who}: {response.status_code} {response.text[:200]}"
        )
    token = response.json().get("access_token")
    if not token:
        raise AirflowNotificationError(f"{base_url}/auth/token answered without an access_token")
    return token


def _asset_id(client: httpx.Client, headers: dict[str, str], name: str, base_url: str) -> int:
    # name_pattern is a case-insensitive substring match where `_` is a wildcard: keep exact hits.
    offset = 0
    while True:
        response = _call(
            client,
            "GET",
            "/api/v2/assets",
            base_url,
            headers=headers,
            params={"name_pattern": name, "limit": PAGE, "offset": offset},
        )
        if response.status_code in (401, 403):
            raise AirflowNotificationError(
                f"the Airflow user may not read assets ({response.status_code}); grant it asset access"
            )
        if response.is_error:
            raise AirflowNotificationError(
                f"listing assets failed: {response.status_code} {response.text[:200]}"
            )
        body = response.json()
        assets = body.get("assets", [])
        for asset in assets:
            if name in (asset.get("name"), asset.get("uri")):
                return int(asset["id"])
        offset += len(assets)
        if not assets or offset >= body.get("total_entries", 0):
            raise AirflowNotificationError(
                f"Airflow at {base_url} has no asset named {name!r}: deploy and parse the DAG that declares "
                f"Asset({name!r}) first"
            )


def _call(
    client: httpx.Client, method: str, path: str, base_url: str, **kwargs: Any
) -> httpx.Response:
    try:
        return client.request(method, path, **kwargs)
    except httpx.TransportError as error:
        raise AirflowNotificationError(
            f"cannot reach the Airflow API at {base_url} ({error}); check RAGWATCH_AIRFLOW_API_URL"
        ) from error
