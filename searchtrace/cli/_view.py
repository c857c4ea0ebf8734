"""`searchtrace view --db DB [--port 8765]`: the evidence explorer on 127.0.0.1 (docs/how-to/explorer.md)."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import click

from searchtrace.store import BadInput


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@click.command("view")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--port", type=int, default=8765, show_default=True, help="TCP port on 127.0.0.1 (0: any free port).")
def view(db: Path, port: int) -> None:
    """Browse trajectories, evidence, the report and SQL in a web browser; works while a run records."""
    import uvicorn

    from searchtrace.store import require_database
    from searchtrace.web import create_app, prepare

    require_database(db)
    if not 0 <= port <= 65535:
        raise BadInput(f"--port: {port} is not a TCP port")
    if port == 0:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
    elif not _port_free(port):
        raise BadInput(f"--port: 127.0.0.1:{port} is in use; pick another port (or 0 for any free one)")
    live = prepare(db)
    token = secrets.token_urlsafe(24)  # this start's; the page at the printed URL sets it as a cookie
    click.echo(f"searchtrace view: http://127.0.0.1:{port}/?token={token}  ({db}{', read through the run that holds it' if live else ''}; Ctrl-C to stop)",
               nl=True)
    uvicorn.run(create_app(db, warm=True, token=token), host="127.0.0.1", port=port, log_level="warning", access_log=False)
