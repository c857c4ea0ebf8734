"""`searchtrace sandbox`: the offline sandbox world as a real HTTP server on 127.0.0.1, and its question set."""

from __future__ import annotations

from pathlib import Path

import click

from searchtrace.store import BadInput


@click.group()
def sandbox() -> None:
    """The sandbox world: an offline stand-in for the search, reader and chat APIs."""


@sandbox.command()
@click.option("--port", type=int, default=8765, show_default=True, help="TCP port on 127.0.0.1 (0: any free port).")
@click.option("--fault-rate", "fault_rates", multiple=True, metavar="KIND=P[,KIND=P]",
              help="Chaos faults, e.g. '429=0.05,timeout=0.01' (a bare number spreads over 429/500/503).")
@click.option("--fault-seed", type=int, default=0, show_default=True, help="Seed of the fault draws.")
@click.option("--fault-route", "fault_routes", multiple=True, metavar="ROUTE",
              help="Limit chaos faults to these routes: a search provider's name, jina, chat or batch.")
@click.option("--hang-seconds", type=float, default=3600.0, show_default=True, help="How long a `timeout` fault hangs.")
@click.option("--batch-delay", "batch_delay", type=click.FloatRange(0, 86400), default=0.0, show_default=True,
              help="Seconds a model batch (OpenAI Batch, Anthropic Message Batches) stays in progress; its items' "
                   "faults are the fault kinds errored and expired on route batch (docs/how-to/batch.md).")
def serve(port: int, fault_rates: tuple[str, ...], fault_seed: int, fault_routes: tuple[str, ...], hang_seconds: float,
          batch_delay: float) -> None:
    """Serve the sandbox until interrupted: every route under one port, and each provider at the root of a port of
    its own (so official clients work); prints the environment and an example per provider."""
    from searchtrace.adapters.sandbox import (
        EXAMPLES,
        FaultPlan,
        Served,
        create_apps,
        env_exports,
        parse_rates,
        routes,
    )
    from searchtrace.adapters.sandbox import serve as run_server

    unknown = sorted(set(fault_routes) - set(routes()))
    if unknown:
        raise BadInput(f"--fault-route: unknown route {', '.join(map(repr, unknown))} (known: {', '.join(routes())})")

    try:
        rates = parse_rates(list(fault_rates))
        plan = FaultPlan(seed=fault_seed, rates=rates, routes=frozenset(fault_routes) if fault_routes else None) if rates else None
    except ValueError as exc:
        raise BadInput(f"--fault-rate: {exc}") from None
    if port < 0 or port > 65535 - 16:
        raise BadInput(f"--port: {port} is not a TCP port with 16 free ports above it")
    own_ports = port != 0  # --port 0: every port free, else the providers on the ports above --port

    def announce(served: Served) -> None:
        click.echo(f"sandbox listening on {served.root} (every provider under /<name>; Ctrl-C to stop)")
        click.echo("# each provider at the root of its own port (works for searchtrace and for official clients):")
        for name, value in env_exports(served.urls).items():
            click.echo(f"export {name}={value}")
        click.echo("# for example:")
        for name, url in served.urls.items():
            if name in EXAMPLES:
                click.echo(f"#   {name}: {EXAMPLES[name].format(url=url)}")
        if plan is not None:
            click.echo(f"# faults: seed={plan.seed} rates={plan.rates} routes={sorted(plan.routes) if plan.routes else 'all'}")

    app, apps = create_apps(faults=plan, hang_s=hang_seconds, batch_delay_s=batch_delay)
    try:
        run_server(port, app, apps, on_start=announce, consecutive=own_ports)
    except RuntimeError as exc:
        raise BadInput(f"--port: {exc}") from None


@sandbox.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def questions(path: Path) -> None:
    """Write the sandbox question set (qid, question, answer, strata) as JSONL to PATH."""
    from searchtrace.adapters.sandbox import write_questions_jsonl

    if path.parent and not path.parent.exists():
        raise BadInput(f"{path}: folder {path.parent} does not exist")
    write_questions_jsonl(path)
    click.echo(f"wrote {len(path.read_bytes().splitlines())} questions to {path}")
