"""The `searchtrace` click group, whose subcommands load lazily from their own modules, and `main`, its entry point
(bad input: one line, exit 2)."""

from __future__ import annotations

import errno
import importlib
import importlib.util
import sys
from typing import Any

import click

from searchtrace.store import BadInput, StoreError, bounded_line

# name -> "module:attribute"; each module owns one area of the command line.
COMMANDS: dict[str, str] = {
    "demo": "searchtrace.cli._demo:demo",
    "doctor": "searchtrace.cli._doctor:doctor",
    "record": "searchtrace.cli._record:record",
    "search": "searchtrace.cli._probe:search",
    "fetch": "searchtrace.cli._probe:fetch",
    "judge": "searchtrace.cli._judge:judge",
    "grade": "searchtrace.cli._grade:grade",
    "replay": "searchtrace.cli._replay:replay",
    "import": "searchtrace.cli._interchange:import_cmd",
    "export": "searchtrace.cli._interchange:export_cmd",
    "report": "searchtrace.cli._report:report",
    "sql": "searchtrace.cli._sql:sql",
    "view": "searchtrace.cli._view:view",
    "verify": "searchtrace.cli._verify:verify",
    "merge": "searchtrace.cli._merge:merge",
    "sample": "searchtrace.cli._sample:sample",
    "audit": "searchtrace.cli._audit:audit",
    "sandbox": "searchtrace.cli._sandbox:sandbox",
    "bench": "searchtrace.cli._bench:bench",
    "proxy": "searchtrace.cli._proxy:proxy",
    "collect": "searchtrace.cli._collect:collect",
    "mcp": "searchtrace.cli._mcp:mcp",
    "ship": "searchtrace.cli._ship:ship",
    "replica": "searchtrace.cli._ship:replica",
}


_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # no room: the disk, the file size limit, the quota


def _duckdb_error(exc: BaseException) -> bool:
    """A DuckDB error; DuckDB is imported by the commands that use it, so none can be raised before it is loaded."""
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(exc, duckdb.Error)


def _no_room(exc: BaseException) -> bool:
    """A write that failed for want of space (disk, file size limit, quota), from Python or from DuckDB."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL
    text = str(exc)
    return any(s in text for s in ("No space left", "File too large", "Disk quota", "Could not write file"))


class Interrupted(Exception):
    """Ctrl-C inside a command, carried past click (which would print an empty line and "Aborted!" for it)."""


class LazyGroup(click.Group):
    """Imports a subcommand only when it is run, so `--help` and unrelated commands stay fast."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        present = {n for n, target in self.lazy.items() if importlib.util.find_spec(target.split(":")[0])}
        return sorted(set(super().list_commands(ctx)) | present)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and importlib.util.find_spec(self.lazy[cmd_name].split(":")[0]):
            module, attr = self.lazy[cmd_name].split(":")
            cmd = getattr(importlib.import_module(module), attr)
            assert isinstance(cmd, click.Command)
            return cmd
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-json", is_flag=True, envvar="SEARCHTRACE_LOG_JSON", help="Structured logs as JSON lines on stderr.")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(log_json: bool, verbose: int) -> None:
    """Record search agents as immutable events and measure their evidence."""
    from searchtrace.engine import configure_logging  # structlog: loaded for a command, not for `--help`

    configure_logging(json=log_json, verbosity=verbose)


def one_line(message: str) -> str:
    """The message on one line of bounded length: line breaks and other control characters (from names, values)
    shown escaped, the line cut where a value quoted whole would make it long (store.bounded_line)."""
    return bounded_line("".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in message))


def fail(message: str) -> None:
    """One clear line on stderr and exit 2 (bad usage or bad input)."""
    click.echo(f"searchtrace: error: {one_line(message)}", err=True)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    try:
        rc = cli.main(args=argv, prog_name="searchtrace", standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("searchtrace: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        fail(exc.format_message())
    except (BadInput, StoreError) as exc:
        fail(str(exc))
    except (KeyboardInterrupt, Interrupted):
        click.echo("searchtrace: interrupted; what was committed is kept, run the same command again to resume", err=True)
        sys.exit(130)
    except Exception as exc:
        if not (isinstance(exc, OSError) or _duckdb_error(exc)) or not _no_room(exc):
            raise
        text = exc.strerror if isinstance(exc, OSError) else str(exc).strip().splitlines()[-1]
        click.echo(f"searchtrace: error: cannot write: {one_line(str(text))} (is the disk full?); what was "
                   "committed is kept", err=True)
        sys.exit(1)
