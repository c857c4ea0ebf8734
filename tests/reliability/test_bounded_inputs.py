"""Every file input is read with a byte bound (docs/reliability.md, hostile input): a FIFO that a writer keeps
feeding is refused in one line once it passes its kind's limit, and an audit TSV of a million rows fails at its
bad line without holding the file in memory."""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchtrace.store import INPUT_LIMITS, EventLog
from tests.builders import run_cli

LIMIT = 4 << 20  # the limit the tests give each kind: 4 MiB
FED = 64 << 20  # what the writer offers at most: 16 times the limit


class Feeder:
    """A thread that writes zeros (or a line) into a FIFO until the reader goes away or FED bytes went in."""

    def __init__(self, fifo: Path, chunk: bytes) -> None:
        self.fifo, self.chunk, self.written = fifo, chunk, 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        fd = os.open(self.fifo, os.O_WRONLY)  # waits for the command to open it
        try:
            while self.written < FED:
                self.written += os.write(fd, self.chunk)
        except BrokenPipeError:
            pass  # the reader stopped reading: what the test expects
        finally:
            os.close(fd)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "endless"
    os.mkfifo(path)
    yield path


@pytest.mark.parametrize("kind,argv,chunk", [
    ("otel", ["import", "--from", "otel", "--db", "{db}", "{fifo}"], b"\0" * 65536),
    ("import", ["import", "--db", "{db}", "{fifo}"], b'{"trajectory_id": "x"' + b" " * 65515),
    ("audit", ["audit", "import", "--db", "{db}", "{fifo}"], b"judge_run_id\t" * 5041),
    ("text", ["report", "--db", "{db}", "--prices", "{fifo}"], b"#" * 65536),
    ("text", ["record", "--config", "{fifo}", "--sandbox", "--db", "{db}", "--no-progress"], b"#" * 65536),
])
def test_an_endless_fifo_is_refused_past_its_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fifo: Path,
                                                    kind: str, argv: list[str], chunk: bytes) -> None:
    db = tmp_path / "s.duckdb"
    EventLog(db).close()  # an empty store: the commands that need one get it
    monkeypatch.setitem(INPUT_LIMITS, kind, LIMIT)
    feeder = Feeder(fifo, chunk)
    got = run_cli(*[a.replace("{db}", str(db)).replace("{fifo}", str(fifo)) for a in argv])
    feeder.thread.join(timeout=60)
    assert got.code == 2 and len(got.err.splitlines()) == 1, got.err[-2000:]
    assert f"{fifo}: more than 4 MiB" in got.err, got.err
    assert LIMIT < feeder.written < FED  # read past the limit, then let go: the writer was stopped short


ROWS = 1_000_000


def peak_of(argv: list[str]) -> tuple[int, str, int]:
    """(exit code, stderr, peak bytes Python held) of one in-process command."""
    tracemalloc.start()
    try:
        got = run_cli(*argv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return got.code, got.err, peak


def test_a_million_row_answer_audit_fails_at_its_bad_line_in_bounded_memory(tmp_path: Path) -> None:
    tsv = tmp_path / "answers.tsv"
    with tsv.open("w") as fh:
        fh.write("provider\tqid\tsemantic_match\nbrave\tq0\ttrue\nbrave\tq1\tmaybe\n")
        fh.writelines(f"brave\tq{i}\ttrue\n" for i in range(2, ROWS))
    assert tsv.stat().st_size > 16 << 20
    code, err, peak = peak_of(["import", "--db", str(tmp_path / "s.duckdb"), "--audit", str(tsv)])
    assert code == 2 and "line 3" in err and "maybe" in err and len(err.splitlines()) == 1, err
    assert peak < 16 << 20, f"{peak / (1 << 20):.0f} MiB held for a file of {tsv.stat().st_size >> 20} MiB"


def test_a_million_row_label_audit_fails_at_its_bad_line_in_bounded_memory(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    EventLog(db).close()
    tsv = tmp_path / "labels.tsv"
    with tsv.open("w") as fh:
        fh.write("judge_run_id\ttrajectory_id\turl_normalized\tsurface\tlabel\tjudge_value\thuman_value\n")
        fh.writelines(f"j\tt{i}\thttps://x.test/{i}\tsnippet\trelevant\ttrue\ttrue\n" for i in range(ROWS))
    code, err, peak = peak_of(["audit", "import", "--db", str(db), str(tsv)])
    assert code == 2 and "line 2" in err and "no judge run" in err and len(err.splitlines()) == 1, err
    assert peak < 16 << 20, f"{peak / (1 << 20):.0f} MiB held for a file of {tsv.stat().st_size >> 20} MiB"
