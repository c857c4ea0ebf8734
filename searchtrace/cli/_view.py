"""`searchtrace view --db DB [--port 8766]`: the evidence explorer on 127.0.0.1 (docs/how-to/explorer.md)."""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from searchtrace.store import BadInput

PORT = 8766  # `sandbox serve` has 8765: both can run with their defaults
STOP_S = 0  # on SIGTERM / Ctrl-C, requests still running are cancelled at once (a read loses nothing)


@click.command("view")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--port", type=int, default=PORT, show_default=True, help="TCP port on 127.0.0.1 (0: any free port).")
def view(db: Path, port: int) -> None:
    """Browse trajectories, evidence, the report and SQL in a web browser; works while a run records."""
    import anyio

    from searchtrace.adapters import bind_local, serve_local
    from searchtrace.store import require_database
    from searchtrace.web import create_app, prepare

    require_database(db)
    if not 0 <= port <= 65535:
        raise BadInput(f"--port: {port} is not a TCP port")
    live = prepare(db)
    listener = bind_local(port)
    token = secrets.token_urlsafe(24)  # this start's; the page at the printed URL sets it as a cookie
    app = create_app(db, warm=True, token=token)

    def ready(host: str, bound: int) -> None:  # printed once it accepts connections, not before
        click.echo(f"searchtrace view: http://{host}:{bound}/?token={token}  "
                   f"({db}{', read through the run that holds it' if live else ''}; Ctrl-C to stop)")

    try:
        anyio.run(lambda: serve_local(app, listener, ready=ready, grace_s=STOP_S))
    finally:
        listener.close()
        app.state.source.close()  # no lifespan here: statements still running are interrupted, the file let go
