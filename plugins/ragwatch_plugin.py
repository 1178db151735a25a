"""Registers the ragwatch page with Airflow: a FastAPI app on the api-server and a nav entry.

Airflow imports every module of the plugins folder; this is the one that declares the plugin.
The app lives in `ragwatch_airflow.ui`, testable without Airflow running.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from ragwatch_airflow.ui import (
    airflow_active_runs,
    airflow_login_url,
    create_app,
    require_airflow_reader,
)

ragwatch_app = create_app(
    authorize=require_airflow_reader, login_url=airflow_login_url, active_runs=airflow_active_runs
)


class RagwatchPlugin(AirflowPlugin):
    name = "ragwatch"
    fastapi_apps = [{"app": ragwatch_app, "url_prefix": "/ragwatch", "name": "ragwatch"}]
    # A relative href is framed inside the Airflow UI, which sends its session cookie along.
    external_views = [
        {
            "name": "ragwatch",
            "href": "/ragwatch/",
            "destination": "nav",
            "url_route": "ragwatch",
        }
    ]
