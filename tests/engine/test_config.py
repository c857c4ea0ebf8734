"""Run configs: every invalid value is one BadInput naming file and key; defaults, env overrides, run ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from searchtrace.engine import load_config, point_at_sandbox
from searchtrace.store import BadInput

GOOD = """
[agent]
model = "gpt-5.4"
[providers.brave]
params = { country = "US" }
[providers.tavily]
rps = 2
[dataset]
path = "q.jsonl"
[sample]
n = 2
"""


def write(tmp: Path, text: str) -> Path:
    (tmp / "q.jsonl").write_text('{"qid": "a", "question": "Q?", "answer": "A"}\n' * 1)
    p = tmp / "run.toml"
    p.write_text(text)
    return p


def test_good_config_gets_kind_defaults_and_a_stable_run_id(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD), env={})
    assert cfg.providers["brave"].kind == "brave" and cfg.providers["brave"].base_url == "https://api.search.brave.com"
    assert cfg.providers["tavily"].rps == 2.0 and cfg.providers["brave"].rps > 0
    assert cfg.agent.key_env == "OPENAI_API_KEY" and cfg.fetch.timeout_s == 15.0 and cfg.fetch.max_bytes == 2 * 1024 * 1024
    assert cfg.limits.max_iterations == 10
    assert cfg.dataset.path == str(tmp_path / "q.jsonl") and cfg.dataset.id.startswith("q.jsonl:")
    rid = cfg.effective_run_id()
    assert rid.startswith("run-") and load_config(tmp_path / "run.toml", env={}).effective_run_id() == rid
    # rates are not part of the protocol; params are
    faster = load_config(write(tmp_path, GOOD.replace("rps = 2", "rps = 9")), env={})
    assert faster.effective_run_id() == rid
    other = load_config(write(tmp_path, GOOD.replace('"US"', '"DE"')), env={})
    assert other.effective_run_id() != rid
    body = cfg.to_event()
    assert body["prompt"]["version"] == "agent/1" and len(body["prompt"]["sha256"]) == 64 and body["run_id"] == rid


def test_env_overrides_base_urls_and_sandbox_points_everything(tmp_path: Path) -> None:
    env = {"SEARCHTRACE_BRAVE_BASE_URL": "http://127.0.0.1:9/b", "OPENAI_BASE_URL": "http://127.0.0.1:9/o"}
    cfg = load_config(write(tmp_path, GOOD), env=env)
    assert cfg.providers["brave"].base_url == "http://127.0.0.1:9/b" and cfg.agent.base_url == "http://127.0.0.1:9/o"
    assert cfg.providers["tavily"].base_url == "https://api.tavily.com"
    rid = cfg.effective_run_id()
    point_at_sandbox(cfg, "http://127.0.0.1:8765/")
    assert cfg.providers["tavily"].base_url == "http://127.0.0.1:8765/tavily"
    assert cfg.fetch.base_url == "http://127.0.0.1:8765/jina" and cfg.agent.base_url == "http://127.0.0.1:8765/openai/v1"
    assert cfg.agent.model == "sandbox-agent" and cfg.effective_run_id() != rid


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('model = "gpt-5.4"', ""), "key agent.model: required"),
        (lambda t: t.replace('model = "gpt-5.4"', 'model = "gpt-5.4"\napi = "graphql"'),
         "key agent.api: must be one of 'chat', 'responses', 'anthropic', 'gemini', got 'graphql'"),
        (lambda t: t.replace('model = "gpt-5.4"', 'model = "gpt-5.4"\napi = 1'), "key agent.api: Expected `str`, got `int`"),
        (lambda t: t.replace("rps = 2", 'rps = "fast"'), "key providers.tavily.rps: Expected `float`, got `str`"),
        (lambda t: t.replace("rps = 2", "rps = -1"), "key providers.tavily.rps: must be > 0"),
        (lambda t: t.replace("rps = 2", "speed = 2"), "key providers.tavily.speed: unknown key"),
        (lambda t: t.replace("[providers.tavily]", "[providers.bing]"), "key providers.bing.kind: unknown provider 'bing'"),
        (lambda t: t.replace("n = 2", "n = 0"), "key sample.n: must be >= 1"),
        (lambda t: t.replace('"q.jsonl"', '"missing.jsonl"'), "key dataset.path: no such file"),
        (lambda t: t + "[limits]\nmax_iterations = 0\n", "key limits.max_iterations: must be >= 1"),
        (lambda t: t + "[fetch]\nbase_url = \"ftp://x\"\n", "key fetch.base_url: 'ftp://x' is not an http(s) URL"),
        (lambda t: 'run_id = "a b"\n' + t, "key run_id: 'a b' may only hold"),
        (lambda t: t.replace("[agent]", "[agent\n"), "not valid TOML"),
        (lambda t: t.replace("rps = 2", 'rps = 2\nquota = "team x"'), "key providers.tavily.quota: 'team x' may only hold"),
    ],
)
def test_bad_values_name_file_and_key(tmp_path: Path, edit: object, message: str) -> None:
    path = write(tmp_path, edit(GOOD))  # type: ignore[operator]
    with pytest.raises(BadInput) as err:
        load_config(path, env={})
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_a_quota_domain_is_recorded_and_reaches_the_endpoint(tmp_path: Path) -> None:
    from searchtrace.engine._record import _endpoint

    plain = load_config(write(tmp_path, GOOD), env={})
    cfg = load_config(write(tmp_path, GOOD.replace("rps = 2", 'rps = 2\nquota = "tavily:team-x"')), env={})
    assert cfg.effective_run_id() == plain.effective_run_id()  # a quota is how fast, not what: not in the run id
    assert cfg.to_event()["providers"]["tavily"]["quota"] == "tavily:team-x"  # recorded in run.started
    assert all("quota" not in section for section in (plain.to_event()["agent"], plain.to_event()["providers"]["brave"]))
    assert _endpoint(cfg.providers["tavily"]).quota == "tavily:team-x" and _endpoint(cfg.agent).quota is None


def test_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("rps = 2", "rps = -1"))
    exe = str(Path(sys.executable).parent / "searchtrace")
    r = subprocess.run([exe, "record", "--config", str(path), "--db", str(tmp_path / "x.duckdb")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"searchtrace: error: {path}: key providers.tavily.rps: must be > 0, got -1.0"]
    assert not (tmp_path / "x.duckdb").exists()
    good = write(tmp_path, GOOD.replace("n = 2", "n = 5"))
    r = subprocess.run([exe, "record", "--config", str(good), "--db", str(tmp_path / "x.duckdb")], capture_output=True, text=True)
    assert r.returncode == 2 and "sample.n = 5 is more than the 1 questions" in r.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_example_config_is_valid_and_params_are_effective(tmp_path: Path) -> None:
    from searchtrace.engine import EXAMPLE_CONFIG

    (tmp_path / "questions.jsonl").write_text('{"question": "Q?", "answer": "A"}\n')
    (tmp_path / "ex.toml").write_text(EXAMPLE_CONFIG)
    cfg = load_config(tmp_path / "ex.toml", env={})
    assert sorted(cfg.providers) == ["brave", "firecrawl", "tavily"] and cfg.run_id == "my-run"
    assert cfg.providers["brave"].params["count"] == 10 and cfg.providers["brave"].params["search_lang"] == "en"
    assert cfg.providers["tavily"].params["include_raw_content"] is False
    assert cfg.to_event()["providers"]["firecrawl"]["params"]["limit"] == 10


def test_questions_without_strata_are_sampled_by_seeded_hash(tmp_path: Path) -> None:
    import hashlib

    from searchtrace.engine import load_questions

    rows = [f'{{"qid": "q{i}", "question": "Question {i}?", "answer": "A{i}"}}' for i in range(10)]
    write(tmp_path, GOOD.replace("n = 2", "n = 3"))
    (tmp_path / "q.jsonl").write_text("\n".join(rows) + "\n")
    cfg = load_config(tmp_path / "run.toml", env={})
    got = [q.qid for q in load_questions(cfg)]
    want = sorted((f"q{i}" for i in range(10)), key=lambda q: hashlib.sha256((cfg.sample.seed + q).encode()).hexdigest())[:3]
    assert got == want and all(q.strata == {} for q in load_questions(cfg))
    (tmp_path / "q.jsonl").write_text(rows[0] + "\n" + '{"qid": "x", "question": "Q?", "answer": true}\n')
    cfg.sample.n = None
    with pytest.raises(BadInput, match="column 'answer' must be a string, a number or a list of them, found bool"):
        load_questions(cfg)


MORE = """
[agent]
model = "gpt-5.4"
[providers.exa]
[providers.exa-text]
kind = "exa"
params = { contents = { text = { maxCharacters = 4000 } } }
[providers.jina_search]
params = { content = true }
[providers.serper]
[dataset]
path = "q.jsonl"
"""


def test_new_providers_take_their_defaults_and_the_run_records_page_text(tmp_path: Path) -> None:
    """docs/how-to/providers.md: page text is off by default; turned on, run.started's config says so."""
    env = {"SEARCHTRACE_SERPER_BASE_URL": "http://127.0.0.1:9/serper"}
    cfg = load_config(write(tmp_path, MORE), env=env)
    assert cfg.providers["exa"].base_url == "https://api.exa.ai" and cfg.providers["exa"].key_env == "EXA_API_KEY"
    assert cfg.providers["serper"].base_url == "http://127.0.0.1:9/serper"
    assert cfg.providers["jina_search"].key_env == "JINA_API_KEY"
    assert cfg.providers["exa"].params["contents"] == {"highlights": True}
    assert cfg.to_event()["page_text"] == {"exa": False, "exa-text": True, "jina_search": True, "serper": False}
    with pytest.raises(BadInput, match="unknown provider 'bing'"):
        load_config(write(tmp_path, MORE.replace('kind = "exa"', 'kind = "bing"')), env={})
