"""The manual is tested like code: generated pages are current, the command reference covers `searchtrace --help`
recursively, every code block runs (or says why not), no user-facing text cites a document users do not have, and
the README stays a short front door. The conventions are in docs/contributing.md."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from tests.builders import run_cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX = 12 * 1024
SOURCE_TREES = ("adapters", "engine", "store", "replay", "analytics", "benchmarks", "searchtrace", "examples")

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*(?P<kind>not run|file):\s*(?P<arg>.*?)\s*-->\s*$")
INCLUDE = re.compile(r'^\s*--8<--\s+"(?P<target>[^"]+)"\s*$')
SHELL = {"bash", "sh", "shell", "console"}
NOT_CODE = {"text"}  # program output, usage lines, prompt text: shown, never run


def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen", DOCS / "_gen.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------------- code blocks
@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    mark: str | None  # "not run" / "file"
    arg: str  # the reason, or the file name

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.line}"


def expand(body: str) -> str:
    """A block's text as the built site shows it: snippet includes (`--8<-- "path[:section | :start:end]"`) replaced."""
    out: list[str] = []
    for line in body.splitlines(keepends=True):
        m = INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        path, _, rest = m.group("target").partition(":")
        text = (ROOT / path).read_text(encoding="utf-8")
        if rest and not rest[0].isdigit():
            text = text.split(f"--8<-- [start:{rest}]\n", 1)[1].split(f"--8<-- [end:{rest}]", 1)[0]
            text = text.rsplit("\n", 1)[0] + "\n"  # the end marker's comment prefix
        elif rest:
            start, _, end = rest.partition(":")
            lines = text.splitlines(keepends=True)
            text = "".join(lines[int(start) - 1:int(end) if end else None])
        out.append(text)
    return "".join(out)


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        indent = len(m.group("indent"))
        body = "".join(line[indent:] for line in m.group("body").splitlines(keepends=True))
        found.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"), body,
                           mark.group("kind") if mark else None, mark.group("arg") if mark else ""))
    return found


def pages() -> list[Path]:
    """README first, then the site's pages in nav order (the tutorial records the store later pages read), then any
    page the nav does not list."""
    nav = re.findall(r":\s+(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    listed = [DOCS / p for p in nav]
    rest = sorted(p for p in DOCS.rglob("*.md") if p not in listed and "_generated" not in p.parts)
    return [README, *listed, *rest]


def commands(block: Block) -> list[list[str]]:
    """The shell lines of a block, continuation lines joined, comments dropped, each split as a shell would."""
    joined = re.sub(r"\\\n\s*", " ", block.body)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def run_block(block: Block, ns: dict[str, object]) -> None:
    body = expand(block.body)
    if block.lang in NOT_CODE:
        return
    if block.lang == "toml":
        tomllib.loads(body)
    elif block.lang == "json":
        json.loads(body)
    elif block.lang == "python":
        compile(body, block.where(), "exec")
    if block.mark == "file":
        Path(block.arg).write_text(body, encoding="utf-8")
        return
    if block.mark == "not run":
        assert block.arg, f"{block.where()}: `not run` needs a reason"
        return
    if block.lang in SHELL:
        for argv in commands(block):
            assert argv[0] == "searchtrace", f"{block.where()}: `{argv[0]}` is not a searchtrace command: mark the block <!-- not run: why -->"
            ran = run_cli(*argv[1:])
            assert ran.code == 0, f"{block.where()}: {shlex.join(argv)} exited {ran.code}: {ran.err.strip()[-800:]}"
    elif block.lang == "python":
        exec(compile(body, block.where(), "exec"), ns)  # noqa: S102 - the manual's own example
    elif block.lang not in {"toml", "json"}:
        raise AssertionError(f"{block.where()}: a ```{block.lang or '(no language)'} block is neither run nor marked "
                             "<!-- not run: why --> (docs/contributing.md)")


def test_every_code_block_runs_or_says_why_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One store for the whole manual: the tutorial's `searchtrace demo` records it, later pages read it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEARCHTRACE_CACHE_DIR", str(tmp_path / "cache"))
    ran = {"shell": 0, "python": 0, "file": 0, "not run": 0}
    for page in pages():
        ns: dict[str, object] = {"__name__": "docs_example"}
        for block in blocks(page):
            run_block(block, ns)
            kind = block.mark or ("shell" if block.lang in SHELL else block.lang)
            ran[kind] = ran.get(kind, 0) + 1
    assert (tmp_path / "searchtrace-demo" / "demo.duckdb").is_file()
    assert ran["shell"] >= 10 and ran["python"] >= 5 and ran["file"] >= 3, ran
    assert undocumented_report_keys(tmp_path / "searchtrace-demo" / "demo.duckdb", tmp_path / "prices-example.toml") == []


def undocumented_report_keys(db: Path, prices: Path) -> list[str]:
    """Every key of a provider block (priced, with intervals) is defined on the metrics or statistics page."""
    ran = run_cli("report", "--db", str(db), "--json", "--bootstrap", "50", "--prices", str(prices))
    assert ran.code == 0, ran.err
    blocks = json.loads(ran.out)["providers"].values()
    keys = {re.sub(r"_(ci|n_eff|ci_undefined)$", "", k) for block in blocks for k in block}
    assert len(keys) > 40
    pages = "".join((DOCS / "concepts" / name).read_text(encoding="utf-8") for name in ("metrics.md", "statistics.md"))
    return sorted(k for k in keys if f"`{k}`" not in pages)


def test_the_block_checks_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("x\n\n```bash\nmake demo\n```\n\n```xml\n<a/>\n```\n\n<!-- not run: needs a person -->\n"
                    "```bash\nrm -rf /\n```\n\n    ```python\n    x = 1\n    ```\n", encoding="utf-8")
    found = blocks(page)
    assert [(b.lang, b.mark) for b in found] == [("bash", None), ("xml", None), ("bash", "not run"), ("python", None)]
    assert found[3].body == "x = 1\n"
    with pytest.raises(AssertionError, match="not a searchtrace command"):
        run_block(found[0], {})
    with pytest.raises(AssertionError, match="neither run nor marked"):
        run_block(found[1], {})
    run_block(found[2], {})
    assert expand('--8<-- "docs/_gen.py:1:1"\n') == (DOCS / "_gen.py").read_text(encoding="utf-8").splitlines(True)[0]


# -------------------------------------------------------------------------------------- generated reference
def test_generated_pages_are_current() -> None:
    """docs/_gen.py writes them from the code; a changed command, event or report field fails here until rerun."""
    assert [str(p.relative_to(ROOT)) for p in gen().stale()] == []


def help_tree(path: tuple[str, ...] = ()) -> dict[tuple[str, ...], set[str]]:
    """Every command path reachable from `searchtrace --help`, with the option names its help lists."""
    ran = run_cli(*path, "--help")
    assert ran.code == 0, ran.err
    options: set[str] = set()
    subs: list[str] = []
    section = ""
    for line in ran.out.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        entry = line.strip()
        if section == "Options" and entry.startswith("-") and line.startswith("  ") and not line.startswith("   "):
            options |= {o.split()[0].strip(",") for o in re.split(r",\s*|\s*/\s*", entry.split("  ")[0]) if o.startswith("-")}
        elif section == "Commands" and line.startswith("  ") and not line.startswith("   ") and entry:
            subs.append(entry.split()[0])
    tree = {path: options - {"-h", "--help"}}
    for sub in subs:
        tree |= help_tree((*path, sub))
    return tree


def missing_from_reference(page: str, tree: dict[tuple[str, ...], set[str]]) -> list[str]:
    sections = re.split(r"^#{2,4} `(searchtrace[^`]*)`\s*$", page, flags=re.M)
    by_name = dict(zip(sections[1::2], sections[2::2], strict=True))
    missing = []
    for path, options in tree.items():
        name = " ".join(("searchtrace", *path))
        if name not in by_name:
            missing.append(name)
            continue
        missing += [f"{name} {o}" for o in sorted(options) if f"`{o}`" not in by_name[name]]
    return missing


def test_the_command_reference_covers_every_command_and_option() -> None:
    tree = help_tree()
    assert len(tree) > 30 and ("judge", "compare") in tree and "--judge-run-id" in tree[("report",)]
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert missing_from_reference(page, tree) == []
    # the check sees a command or an option without an entry
    assert missing_from_reference(page.replace("`--judge-run-id`", "`--x`"), tree)
    assert "searchtrace sql" in missing_from_reference(page.replace("## `searchtrace sql`", "## sql"), tree)


# ------------------------------------------------------------------------------------------ user-facing text
SPEC = re.compile(r"\bSPEC\b")


def spec_hits(files: list[Path]) -> list[str]:
    return [f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}:{n}" for f in files for n, line in
            enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1) if SPEC.search(line)]


def user_files() -> list[Path]:
    texts = {".md", ".py", ".toml", ".json", ".html", ".js", ".css", ".sql", ".txt", ".yml"}
    files = [README, ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml", ROOT / "pyproject.toml"]
    for tree in ("docs", *SOURCE_TREES):
        files += [p for p in (ROOT / tree).rglob("*") if p.is_file() and p.suffix in texts
                  and "__pycache__" not in p.parts]
    return files


def test_no_user_facing_text_cites_spec(tmp_path: Path) -> None:
    """Users have the repository and its docs, not the project's internal contract: nothing they read cites it."""
    files = user_files()
    assert len(files) > 200
    assert spec_hits(files) == []
    helps = "\n".join(run_cli(*path, "--help").out for path in help_tree())
    assert not SPEC.search(helps)
    planted = tmp_path / "x.md"
    planted.write_text("fine\nsee SPEC §3\n", encoding="utf-8")
    assert spec_hits([planted]) == [f"{planted}:2"]


def test_the_readme_is_a_short_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= README_MAX
    assert "make demo" in text and "make test" in text and "docs/trajectory.png" in text
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).exists(), target


def test_the_pydantic_ai_guide_records_through_the_proxy(tmp_path: Path) -> None:
    """The guide's agent, as written, against `proxy --upstream sandbox`: one trajectory, answered and recorded."""
    pytest.importorskip("pydantic_ai.models.openai")
    from tests.proxy.support import proxy, streams, write_questions

    [code] = [b.body for b in blocks(DOCS / "how-to" / "pydantic-ai.md") if b.lang == "python"]
    qfile = tmp_path / "questions.jsonl"
    [row] = write_questions(qfile, 1)
    db = tmp_path / "runs.duckdb"
    script = tmp_path / "agent.py"  # its own process: the framework's event loop and clients are not the test's
    with proxy(db, qfile, "pydantic-ai") as p:
        script.write_text(code.replace('"http://127.0.0.1:8790"', repr(p.url))
                          + f"\nprint(answer('brave', {row['qid']!r}, {row['question']!r}))\n", encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    final = done.stdout.strip().splitlines()[-1]
    [(stream, events)] = streams(db).items()
    payloads = [payload for _, _, payload in events]
    types = [str(type(x).__struct_config__.tag) for x in payloads]
    assert stream.endswith(f":brave:{row['qid']}") and "search.result" in types and "model.responded" in types
    assert types[-2:] == ["answer.final", "trajectory.finished"] and getattr(payloads[-2], "text", None) == final
