"""`python -m deploy.local_stack up|down|status|env|monitoring-up|monitoring-down` (what `make
up`/`make down` run)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from deploy import local_stack
from deploy.local_stack.layout import DEFAULT_WORKERS, EXECUTORS
from deploy.local_stack.lifecycle import down, status, up
from deploy.local_stack.model import StackError
from deploy.local_stack.monitoring import monitoring_down, monitoring_up
from deploy.local_stack.state import plan_for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.local_stack", description=local_stack.__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser(
        "up", help="start (or repair) the stack; first start seeds, indexes, builds gold"
    )
    up_parser.add_argument(
        "--executor",
        choices=list(EXECUTORS),
        help="local: the LocalExecutor (default for a new stack); celery: Redis and Celery workers "
        "(default: the stack's last one)",
    )
    up_parser.add_argument(
        "--workers",
        type=int,
        help=f"Celery workers (default {DEFAULT_WORKERS}, or the stack's last count)",
    )
    up_parser.add_argument(
        "--seed-days", type=int, help="first start: days of demo traffic (default: the demo's)"
    )
    up_parser.add_argument("--seed-per-day", type=int, help="first start: demo traces per day")
    up_parser.add_argument(
        "--corpus", type=Path, help="first start: folder to index (default: the demo corpus)"
    )
    sub.add_parser("down", help="stop every process of the stack")
    sub.add_parser("status", help="which processes run")
    sub.add_parser("env", help="print the variables that point the ragwatch CLI at the stack")
    for name, text in (
        (
            "monitoring-up",
            "start only a fresh Pushgateway and Prometheus (make demo); print their URLs",
        ),
        ("monitoring-down", "stop what monitoring-up started"),
    ):
        sub.add_parser(name, help=text).add_argument(
            "--home", type=Path, required=True, help="their state: <home>/stack"
        )
    args = parser.parse_args(argv)
    if args.command == "monitoring-up":
        try:
            found = monitoring_up(args.home)
        except StackError as failed:
            print(failed, file=sys.stderr)
            return 1
        for key, value in found.items():
            print(f"export {key}={shlex.quote(value)}")
        return 0
    if args.command == "monitoring-down":
        monitoring_down(args.home)
        return 0
    if args.command == "up":
        try:
            up(
                seed_days=args.seed_days,
                seed_per_day=args.seed_per_day,
                corpus=args.corpus,
                executor=args.executor,
                workers=args.workers,
            )
        except StackError as failed:
            print(
                f"{failed}\n`make up` again retries what failed; `make down` stops what has started.",
                file=sys.stderr,
            )
            return 1
    elif args.command == "down":
        return 1 if down() else 0
    elif args.command == "status":
        found = status()
        for name, pid in found.items():
            print(f"{name:24} {'pid ' + str(pid) if pid else 'not running'}")
        return 0 if all(found.values()) else 3
    elif args.command == "env":
        for key, value in sorted(plan_for().cli_env().items()):
            print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
