"""`searchtrace view --db DB [--port 8766]`: the evidence explorer on 127.0.0.1 (docs/how-to/explorer.md)."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from searchtrace.store import BadInput

if TYPE_CHECKING:
    import uvicorn

PORT = 8766  # `sandbox serve` has 8765: both can run with their defaults
STOP_S = 1  # on SIGTERM / Ctrl-C, requests still running after this are cancelled (their statements interrupted)


def _listening(port: int) -> socket.socket:
    """The explorer's socket, bound and listening before anything is printed (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise BadInput(f"--port: 127.0.0.1:{port} is in use; pick another port (or 0 for any free one)") from None
    return sock


def _server(config: uvicorn.Config, line: str) -> uvicorn.Server:
    """A uvicorn server that prints `line` (the URL) once it accepts connections, not before."""
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                click.echo(line)

    return Announcing(config)


@click.command("view")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--port", type=int, default=PORT, show_default=True, help="TCP port on 127.0.0.1 (0: any free port).")
def view(db: Path, port: int) -> None:
    """Browse trajectories, evidence, the report and SQL in a web browser; works while a run records."""
    import uvicorn

    from searchtrace.store import require_database
    from searchtrace.web import create_app, prepare

    require_database(db)
    if not 0 <= port <= 65535:
        raise BadInput(f"--port: {port} is not a TCP port")
    live = prepare(db)
    sock = _listening(port)
    port = int(sock.getsockname()[1])
    token = secrets.token_urlsafe(24)  # this start's; the page at the printed URL sets it as a cookie
    line = (f"searchtrace view: http://127.0.0.1:{port}/?token={token}  "
            f"({db}{', read through the run that holds it' if live else ''}; Ctrl-C to stop)")
    options: dict[str, Any] = {"log_level": "warning", "access_log": False, "timeout_graceful_shutdown": STOP_S}
    config = uvicorn.Config(create_app(db, warm=True, token=token), **options)
    try:
        _server(config, line).run(sockets=[sock])
    finally:
        sock.close()
