"""Reading docker-compose.yml and the Dockerfile: interpolation, mounts, addresses rewritten to
loopback."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

from deploy.local_stack.layout import COMPOSE, DOCKERFILE, LOOPBACK, PROMETHEUS_CONFIG, ROOT
from deploy.local_stack.model import SERVICE_PORTS, Ports
from pipelines.core.batching import available_cpus

_VARIABLE = re.compile(
    r"\$(?:(?P<dollar>\$)|\{(?P<braced>[^}]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))"
)
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>.*))?$", re.DOTALL)


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's variable interpolation: $VAR, ${VAR}, ${VAR:-default}, ${VAR-default},
    ${VAR:?error}, $$."""

    def substitute(match: re.Match) -> str:
        if match.group("dollar"):
            return "$"
        if match.group("plain"):
            return variables.get(match.group("plain"), "")
        parsed = _BRACED.match(match.group("braced"))
        if parsed is None:
            raise ValueError(f"invalid interpolation {match.group(0)!r}")
        name, op, arg = parsed.group("name"), parsed.group("op"), parsed.group("arg") or ""
        present = name in variables
        empty = not variables.get(name)
        if op in (":-", "-"):
            return arg if (empty if op == ":-" else not present) else variables[name]
        if op in (":?", "?"):
            if empty if op == ":?" else not present:
                raise ValueError(f"{name}: {arg}")
        return variables.get(name, "")

    return _VARIABLE.sub(substitute, value)


def compose_file() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def dockerfile_paths() -> tuple[dict[str, str], dict[str, str]]:
    """The image's (ENV name -> value) and (path in the image -> path in the checkout, from
    COPY)."""
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    env: dict[str, str] = {}
    copies: dict[str, str] = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "ENV":
            env.update(w.split("=", 1) for w in words[1:] if "=" in w)
        elif words[0] == "COPY":
            paths = [w for w in words[1:] if not w.startswith("--")]
            if len(paths) == 2 and paths[1].startswith("/"):
                copies[paths[1]] = str(ROOT / paths[0])
    return env, copies


def mounts(service: dict, state: Path) -> dict[str, str]:
    """A compose service's volumes as (path in the container -> path here): bind mounts are files of
    the checkout, named volumes are folders under the stack's state dir."""
    found = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        found[target] = str(ROOT / source) if source.startswith(".") else str(state / source)
    return found


def parallelism(airflow_env: dict[str, str]) -> int:
    """Task slots: every LLM pool slot, plus one per core for the rest.

    A judge or generation batch mostly waits on the model server; with slots = cores alone, two
    batches on 2 cores held every slot and a 2-second push waited minutes behind them. Sized this
    way the `ragwatch_llm` pool can never fill the executor, so push, validate and version tasks
    always find a slot.
    """
    llm_slots = int(airflow_env.get("RAGWATCH_LLM_POOL_SLOTS") or 4)
    return llm_slots + max(2, available_cpus())


def translate_path(word: str, paths: dict[str, str]) -> str:
    """Rewrite a container path (alone or after `--flag=`) to its local counterpart, longest prefix
    first."""
    flag, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
    for inside in sorted(paths, key=len, reverse=True):
        if value == inside or value.startswith(inside.rstrip("/") + "/"):
            value = (
                paths[inside] + value[len(inside.rstrip("/")) :]
                if value != inside
                else paths[inside]
            )
            break
    return f"{flag}{eq}{value}"


def rewrite_addresses(key: str, value: str, ports: Ports, known_services: set[str]) -> str:
    """Compose host names -> 127.0.0.1 and this stack's ports; a compose host this stack does not
    run is an error."""
    if key.startswith("AIRFLOW_CONN_") and value.lstrip().startswith("{"):
        conn = json.loads(value)
        if (conn.get("host"), int(conn.get("port") or 0)) in SERVICE_PORTS:
            conn["port"] = getattr(ports, SERVICE_PORTS[(conn["host"], int(conn["port"]))])
            conn["host"] = LOOPBACK
        elif conn.get("host") in known_services:
            raise ValueError(
                f"{key} points at compose service {conn['host']!r}, which this stack does not run"
            )
        return json.dumps(conn)

    def replace(match: re.Match) -> str:
        host, port = match.group("host"), int(match.group("port"))
        if (host, port) in SERVICE_PORTS:
            return f"{LOOPBACK}:{getattr(ports, SERVICE_PORTS[(host, port)])}"
        if host in known_services:
            raise ValueError(
                f"{key} points at compose service {host!r}, which this stack does not run"
            )
        return match.group(0)

    return re.sub(r"(?<=[/@])(?P<host>[A-Za-z][A-Za-z0-9-]*):(?P<port>\d+)(?!\w)", replace, value)


def derived_prometheus_config(ports: Ports, interval: str | None = None) -> str:
    """monitoring/prometheus.yml with the scrape targets pointed at this stack and the rule files
    made absolute; with `interval`, the scrape and evaluation intervals too (the demo's short-lived
    Prometheus)."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text(encoding="utf-8"))
    if interval:
        config.setdefault("global", {}).update(
            scrape_interval=interval, evaluation_interval=interval
        )
    config["rule_files"] = [
        str((PROMETHEUS_CONFIG.parent / f).resolve()) for f in config.get("rule_files", [])
    ]
    for job in config.get("scrape_configs", []):
        for static in job.get("static_configs", []):
            targets = []
            for target in static["targets"]:
                host, _, port = target.rpartition(":")
                key = ("prometheus", int(port)) if host == "localhost" else (host, int(port))
                if key not in SERVICE_PORTS:
                    raise ValueError(
                        f"{PROMETHEUS_CONFIG}: scrape target {target!r} is not a service this stack runs"
                    )
                targets.append(f"{LOOPBACK}:{getattr(ports, SERVICE_PORTS[key])}")
            static["targets"] = targets
    differ = "targets, rule paths and intervals" if interval else "targets and rule paths"
    header = f"# Derived from {PROMETHEUS_CONFIG.relative_to(ROOT)} by deploy/local_stack: only {differ} differ.\n"
    return header + yaml.safe_dump(config, sort_keys=False)
