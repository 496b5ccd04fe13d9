"""The ``chatgate`` command: ``serve`` and ``check-config``."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import logging.config
import os
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import uvicorn

from chatgate.config import Config, default_config, load_config
from chatgate.drain import ENDING_SECONDS, Drain
from chatgate.errors import ConfigError
from chatgate.serve.server import DrainingServer
from chatgate.telemetry import logging_config
from chatgate.version import installed_version

__all__ = ["ALLOW_UNAUTHENTICATED_ENV", "BACKLOG", "draining_server", "exposure_refusal", "main"]

BACKLOG = 4096
"""The listen queue: a burst of thousands of new streams must not overflow it (uvicorn's default is 2048).
Linux caps it at ``net.core.somaxconn``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chatgate`` command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="chatgate", description="Chat frontends to any LLM.")
    parser.add_argument("--version", action="version", version=f"chatgate {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start the service")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--config", help="config file (default: $CHATGATE_CONFIG, else the built-in agent)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--workers", type=int, default=1, help="server processes sharing the port (default 1)")
    serve.add_argument(
        "--backlog", type=int, default=BACKLOG, help=f"connections waiting to be accepted (default {BACKLOG})"
    )
    serve.add_argument(
        "--root-path",
        default="",
        help="the path prefix a proxy strips before forwarding (e.g. /llm): GET /agents lists routes under it",
    )

    check = commands.add_parser("check-config", help="validate a config file without serving")
    check.add_argument("file")
    check.add_argument("--list-tools", metavar="SERVER", help="also connect to [mcp_servers.SERVER] and list its tools")

    args = parser.parse_args(argv)
    if args.command == "check-config":
        return _check_config(args.file, args.list_tools)
    return _serve(args)


def _check_config(path: str, list_tools: str | None = None) -> int:
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{path}: ok ({len(config.agents)} agent(s); default: {config.default_agent or 'none'})")
    if list_tools is None:
        return 0
    if list_tools not in config.mcp_servers:
        known = ", ".join(config.mcp_servers) or "none"
        print(f"--list-tools: no [mcp_servers.{list_tools}] table (known: {known})", file=sys.stderr)
        return 1
    from chatgate.mcp import root_cause, tool_listing  # the MCP SDK loads only for this

    try:
        lines = tool_listing(config, list_tools)
    except Exception as exc:
        cause = root_cause(exc)
        print(f"mcp_servers.{list_tools}: cannot list its tools: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    print("\n".join(lines) if lines else f"mcp_servers.{list_tools}: lists no tools")
    return 0


def draining_server(config: uvicorn.Config, drain: Drain, *, grace: float) -> uvicorn.Server:
    """The server of one process: drains for up to ``grace`` seconds on SIGTERM (app/serve/server.py)."""
    return DrainingServer(config, drain, grace)


def _serve(args: argparse.Namespace) -> int:
    from chatgate.serve.connections import guarded_protocol
    from chatgate.serve.process import prepare_for_serving
    from chatgate.web import create_app

    path = args.config or os.environ.get("CHATGATE_CONFIG")
    try:
        config: Config = load_config(path) if path else default_config()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    refusal = exposure_refusal(config, args.host, os.environ)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    # One handler and format for chatgate's lines and uvicorn's, with the request id on each.
    log_config = logging_config(config.server.log_format, args.log_level)
    logging.config.dictConfig(log_config)
    _log_access(config, args.host)
    if args.workers < 1:
        print("--workers must be at least 1", file=sys.stderr)
        return 2
    if args.root_path and not args.root_path.startswith("/"):
        print(f"--root-path must start with / (got {args.root_path!r})", file=sys.stderr)
        return 2
    config_path = Path(path) if path else None
    server = partial(draining_server, grace=config.server.shutdown_grace_seconds)
    settings: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "log_config": log_config,
        "proxy_headers": True,
        "backlog": args.backlog,
        "root_path": args.root_path.rstrip("/"),  # uvicorn puts it in scope["root_path"] (app/access/mounting.py)
        "timeout_graceful_shutdown": ENDING_SECONDS,  # after the drain: time for the last streams' ends
        "http": guarded_protocol(config.server),  # head cap and timeouts (app/serve/connections.py)
    }
    if args.workers > 1:
        from chatgate.serve.workers import serve_workers

        warn_budgets_per_process(config, args.workers)

        return serve_workers(args.workers, config, config_path, settings, server)
    app = create_app(config, config_path=config_path)
    prepare_for_serving()
    server(uvicorn.Config(app, **settings), app.services.drain).run()
    return 0


def warn_budgets_per_process(config: Config, workers: int) -> None:
    """Warn that budgets without ``redis_url`` are counted in each of ``workers`` processes alone."""
    budgets = [f"key {key.id!r}" for key in config.keys if key.budget is not None]
    budgets += [f"agent {name!r}" for name, agent in config.agents.items() if agent.budget is not None]
    if budgets and config.server.redis_url is None:
        logging.getLogger("chatgate.usage").warning(
            "BUDGETS ARE PER PROCESS: %s have budgets but no [server] redis_url is set, so each of the %d"
            " workers counts its own spend and together they may spend up to %dx a budget; set redis_url",
            ", ".join(budgets),
            workers,
            workers,
        )


ALLOW_UNAUTHENTICATED_ENV = "CHATGATE_ALLOW_UNAUTHENTICATED"
"""When set (true/false), decides ``[server] allow_unauthenticated`` instead of the file: the Docker files set it."""


def exposure_refusal(config: Config, host: str, environ: Mapping[str, str]) -> str | None:
    """Why ``serve`` must not bind ``host`` with ``config``: a non-loopback address with no keys, unless allowed."""
    allowed = config.server.allow_unauthenticated
    if ALLOW_UNAUTHENTICATED_ENV in environ:
        value = environ[ALLOW_UNAUTHENTICATED_ENV].strip().lower()
        if value not in ("true", "false"):
            return f"{ALLOW_UNAUTHENTICATED_ENV} must be true or false (got {environ[ALLOW_UNAUTHENTICATED_ENV]!r})"
        allowed = value == "true"
    if config.keys or config.auth.jwt is not None or allowed or _is_loopback(host):
        return None
    return (
        f"refusing to serve on {host} without API keys: anyone who can reach it could use every agent.\n"
        "Add [[keys]] to the config (see docs/deployment.md), bind --host 127.0.0.1, or, behind your own\n"
        f"authentication, set [server] allow_unauthenticated = true (or {ALLOW_UNAUTHENTICATED_ENV}=true)."
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _log_access(config: Config, host: str) -> None:
    logger = logging.getLogger("chatgate.access")
    if config.keys:
        ids = ", ".join(key.id for key in config.keys)
        logger.info("API keys required (%d key(s): %s)", len(config.keys), ids)
    if config.auth.jwt is not None:
        logger.info("sign-in tokens of %s accepted for audience %r", config.auth.jwt.issuer, config.auth.jwt.audience)
    if config.keys or config.auth.jwt is not None:
        return
    if _is_loopback(host):
        logger.info("no API keys configured: open to local callers on %s", host)
    else:
        logger.warning("no API keys configured and allow_unauthenticated = true: open to anyone who reaches %s", host)


if __name__ == "__main__":
    sys.exit(main())
