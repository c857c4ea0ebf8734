"""The run config (TOML -> msgspec Structs), validated on load: every bad value is a BadInput naming file and key.

```toml
run_id = "my-run"                 # optional; default: derived from the config's identity hash
[agent]
model = "gpt-5.4"
base_url = "https://api.openai.com/v1"
key_env = "OPENAI_API_KEY"
rps = 5.0                         # requests per second (burst: rps/10 per 0.1 s unless `burst` is set)
concurrency = 8
params = { temperature = 0 }      # extra chat-completions body fields
[limits]
max_iterations = 10
max_trajectories = 16             # trajectories in flight
[fetch]                           # the shared fetch backend (Jina Reader)
timeout_s = 15.0
max_bytes = 2_000_000
concurrency = 4
cache_dir = ".searchtrace-cache/fetch"
[providers.brave]                 # `kind` defaults to the table name: brave, tavily, firecrawl
params = { country = "US" }
[dataset]
path = "questions.jsonl"          # JSONL / CSV / Parquet with qid, question, answer (+ strata); or "sandbox"
[sample]
n = 100
seed = "searchtrace"
```

Environment overrides of base URLs: `SEARCHTRACE_AGENT_BASE_URL`, `SEARCHTRACE_FETCH_BASE_URL`,
`SEARCHTRACE_<PROVIDER>_BASE_URL` (provider table name upper-cased, `-` as `_`).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from store.errors import BadInput

PROVIDER_KINDS = ("brave", "tavily", "firecrawl")
DEFAULT_BASE_URLS = {
    "brave": "https://api.search.brave.com",
    "tavily": "https://api.tavily.com",
    "firecrawl": "https://api.firecrawl.dev",
    "jina": "https://r.jina.ai",
    "openai": "https://api.openai.com/v1",
}
DEFAULT_KEY_ENVS = {
    "brave": "BRAVE_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "firecrawl": "FIRECRAWL_API_KEY",
    "jina": "JINA_API_KEY",
    "openai": "OPENAI_API_KEY",
}
SANDBOX_PATHS = {"brave": "/brave", "tavily": "/tavily", "firecrawl": "/firecrawl", "jina": "/jina", "openai": "/openai/v1"}
SANDBOX_AGENT = "sandbox-agent"
SANDBOX_DATASET = "sandbox"


class _Cfg(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class AgentCfg(_Cfg):
    model: str
    base_url: str = DEFAULT_BASE_URLS["openai"]
    key_env: str = DEFAULT_KEY_ENVS["openai"]
    prompt_version: str = "agent/1"
    rps: float = 5.0
    burst: int = 0
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 4
    params: dict[str, Any] = {}


class ProviderCfg(_Cfg):
    kind: str = ""  # defaults to the table name
    base_url: str = ""  # defaults to the kind's real endpoint
    key_env: str = ""
    rps: float = 5.0
    burst: int = 0
    concurrency: int = 8
    timeout_s: float = 30.0
    max_retries: int = 4
    params: dict[str, Any] = {}


class FetchCfg(_Cfg):
    backend: str = "jina"
    base_url: str = DEFAULT_BASE_URLS["jina"]
    key_env: str = DEFAULT_KEY_ENVS["jina"]
    timeout_s: float = 15.0
    max_bytes: int = 2_000_000
    concurrency: int = 4
    rps: float = 20.0
    burst: int = 0
    max_retries: int = 3
    cache_dir: str = ".searchtrace-cache/fetch"


class LimitsCfg(_Cfg):
    max_iterations: int = 10
    max_trajectories: int = 16


class DatasetCfg(_Cfg):
    path: str
    id: str = ""


class SampleCfg(_Cfg):
    n: int | None = None
    seed: str = "searchtrace"


class RunConfig(_Cfg):
    agent: AgentCfg
    providers: dict[str, ProviderCfg]
    dataset: DatasetCfg
    run_id: str = ""
    fetch: FetchCfg = msgspec.field(default_factory=FetchCfg)
    limits: LimitsCfg = msgspec.field(default_factory=LimitsCfg)
    sample: SampleCfg = msgspec.field(default_factory=SampleCfg)
    sandbox: bool = False  # set by `--sandbox` / the demo, never read from the file

    def identity(self) -> dict[str, Any]:
        """What makes two runs the same protocol (not rates, base URLs or concurrency): hashed into run_id."""
        from engine.prompts import get_prompt

        prompt = get_prompt(self.agent.prompt_version)
        return {
            "agent": {"model": self.agent.model, "params": self.agent.params},
            "prompt": {"version": prompt.version, "sha256": prompt.sha256},
            "max_iterations": self.limits.max_iterations,
            "providers": {n: {"kind": p.kind, "params": p.params} for n, p in sorted(self.providers.items())},
            "fetch": {"backend": self.fetch.backend, "timeout_s": self.fetch.timeout_s, "max_bytes": self.fetch.max_bytes},
            "dataset": self.dataset.id,
            "sample": {"n": self.sample.n, "seed": self.sample.seed},
            "sandbox": self.sandbox,
        }

    def identity_sha256(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self.identity(), order="sorted")).hexdigest()

    def effective_run_id(self) -> str:
        return self.run_id or f"run-{self.identity_sha256()[:12]}"

    def to_event(self) -> dict[str, Any]:
        """The full config for `run.started` (key variable names only, never key values)."""
        from engine.prompts import get_prompt

        prompt = get_prompt(self.agent.prompt_version)
        body: dict[str, Any] = msgspec.to_builtins(self)
        body["prompt"] = {"version": prompt.version, "sha256": prompt.sha256}
        body["identity_sha256"] = self.identity_sha256()
        body["run_id"] = self.effective_run_id()
        return body


_ID_RE = re.compile(r"^[A-Za-z0-9._-]+$")


def _where(exc: msgspec.ValidationError) -> tuple[str, str]:
    msg = str(exc)
    m = re.search(r" - at `\$(.*)`$", msg)
    if not m:
        return "", msg
    key = m.group(1).lstrip(".").replace("[", ".").replace("]", "").replace("'", "").replace('"', "")
    return key, msg[: m.start()]


def _check(cfg: RunConfig, src: str) -> None:
    def bad(key: str, what: str) -> BadInput:
        return BadInput(f"{src}: key {key}: {what}")

    if cfg.run_id and not _ID_RE.match(cfg.run_id):
        raise bad("run_id", f"{cfg.run_id!r} may only hold letters, digits, '.', '_' and '-'")
    for key, value in (
        ("agent.rps", cfg.agent.rps),
        ("fetch.rps", cfg.fetch.rps),
        ("fetch.timeout_s", cfg.fetch.timeout_s),
        ("agent.timeout_s", cfg.agent.timeout_s),
    ):
        if not value > 0:
            raise bad(key, f"must be > 0, got {value}")
    for key, ivalue in (
        ("agent.concurrency", cfg.agent.concurrency),
        ("fetch.concurrency", cfg.fetch.concurrency),
        ("fetch.max_bytes", cfg.fetch.max_bytes),
        ("limits.max_iterations", cfg.limits.max_iterations),
        ("limits.max_trajectories", cfg.limits.max_trajectories),
    ):
        if ivalue < 1:
            raise bad(key, f"must be >= 1, got {ivalue}")
    for key, nvalue in (("agent.burst", cfg.agent.burst), ("fetch.burst", cfg.fetch.burst), ("agent.max_retries", cfg.agent.max_retries)):
        if nvalue < 0:
            raise bad(key, f"must be >= 0, got {nvalue}")
    if not cfg.agent.model.strip():
        raise bad("agent.model", "must not be empty")
    if not cfg.providers:
        raise bad("providers", "at least one [providers.<name>] table is required")
    for name, p in cfg.providers.items():
        if not _ID_RE.match(name):
            raise bad(f"providers.{name}", "provider names may only hold letters, digits, '.', '_' and '-'")
        if p.kind not in PROVIDER_KINDS:
            raise bad(f"providers.{name}.kind", f"unknown provider {p.kind!r} (known: {', '.join(PROVIDER_KINDS)})")
        if not p.rps > 0 or not p.timeout_s > 0:
            raise bad(f"providers.{name}.rps", "rps and timeout_s must be > 0")
        if p.concurrency < 1 or p.burst < 0 or p.max_retries < 0:
            raise bad(f"providers.{name}.concurrency", "concurrency must be >= 1, burst and max_retries >= 0")
    for key, url in [("agent.base_url", cfg.agent.base_url), ("fetch.base_url", cfg.fetch.base_url)] + [
        (f"providers.{n}.base_url", p.base_url) for n, p in cfg.providers.items()
    ]:
        if not re.match(r"^https?://[^/\s]+", url):
            raise bad(key, f"{url!r} is not an http(s) URL")
    if cfg.sample.n is not None and cfg.sample.n < 1:
        raise bad("sample.n", f"must be >= 1, got {cfg.sample.n}")
    if cfg.dataset.path != SANDBOX_DATASET and not Path(cfg.dataset.path).is_file():
        raise bad("dataset.path", f"no such file {cfg.dataset.path!r}")


def _fill_defaults(cfg: RunConfig, base_dir: Path | None) -> None:
    for name, p in cfg.providers.items():
        p.kind = p.kind or name
        p.base_url = p.base_url or DEFAULT_BASE_URLS.get(p.kind, "")
        p.key_env = p.key_env or DEFAULT_KEY_ENVS.get(p.kind, "")
    if base_dir is not None and cfg.dataset.path != SANDBOX_DATASET and not Path(cfg.dataset.path).is_absolute():
        cfg.dataset.path = str(base_dir / cfg.dataset.path)
    if not cfg.dataset.id:
        if cfg.dataset.path == SANDBOX_DATASET:
            cfg.dataset.id = SANDBOX_DATASET
        elif Path(cfg.dataset.path).is_file():
            data = Path(cfg.dataset.path).read_bytes()
            cfg.dataset.id = f"{Path(cfg.dataset.path).name}:{hashlib.sha256(data).hexdigest()[:12]}"


def apply_env(cfg: RunConfig, env: dict[str, str] | None = None) -> None:
    """Base URL overrides from the environment (SPEC §10)."""
    env = dict(os.environ) if env is None else env
    if v := env.get("SEARCHTRACE_AGENT_BASE_URL"):
        cfg.agent.base_url = v
    if v := env.get("SEARCHTRACE_FETCH_BASE_URL"):
        cfg.fetch.base_url = v
    for name, p in cfg.providers.items():
        if v := env.get(f"SEARCHTRACE_{name.upper().replace('-', '_')}_BASE_URL"):
            p.base_url = v


def point_at_sandbox(cfg: RunConfig, root: str) -> None:
    """Every endpoint at the sandbox world rooted at `root`; the agent becomes the scripted `sandbox-agent`."""
    root = root.rstrip("/")
    cfg.sandbox = True
    cfg.agent.base_url = root + SANDBOX_PATHS["openai"]
    if not cfg.agent.model.startswith("sandbox-"):
        cfg.agent.model = SANDBOX_AGENT
    cfg.fetch.base_url = root + SANDBOX_PATHS["jina"]
    for p in cfg.providers.values():
        p.base_url = root + SANDBOX_PATHS[p.kind]


def _convert(data: Any, typ: type[Any], src: str, prefix: str) -> Any:
    """msgspec.convert with its error turned into `src: key <dotted key>: what`."""
    try:
        return msgspec.convert(data, typ, strict=True)
    except msgspec.ValidationError as exc:
        key, what = _where(exc)
        key = ".".join(k for k in (prefix, key) if k)
        for start, label in (("Object missing required field", "required"), ("Object contains unknown field", "unknown key")):
            if what.startswith(start):
                field = what.split("`")[1] if "`" in what else "?"
                raise BadInput(f"{src}: key {'.'.join(k for k in (key, field) if k)}: {label}") from None
        raise BadInput(f"{src}: key {key or '(top level)'}: {what}") from None


def parse_config(data: dict[str, Any], src: str, base_dir: Path | None = None) -> RunConfig:
    """Validates a decoded TOML document; raises BadInput naming `src` and the key."""
    if "sandbox" in data:
        raise BadInput(f"{src}: key sandbox: not a config key (use `record --sandbox`)")
    data = dict(data)
    providers_raw = data.pop("providers", None)
    if providers_raw is None:
        raise BadInput(f"{src}: key providers: required (one [providers.<name>] table per provider)")
    if not isinstance(providers_raw, dict):
        raise BadInput(f"{src}: key providers: must be a table of [providers.<name>] tables")
    providers = {name: _convert(body, ProviderCfg, src, f"providers.{name}") for name, body in providers_raw.items()}
    data["providers"] = {}
    cfg: RunConfig = _convert(data, RunConfig, src, "")
    cfg.providers = providers
    _fill_defaults(cfg, base_dir)
    _check(cfg, src)
    return cfg


def load_config(path: str | Path, *, env: dict[str, str] | None = None) -> RunConfig:
    """Reads and validates a TOML run config, then applies environment base-URL overrides."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise BadInput(f"{p}: cannot read config ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{p}: not valid TOML ({exc})") from None
    cfg = parse_config(data, str(p), p.parent)
    apply_env(cfg, env)
    _check(cfg, str(p))
    return cfg


def sandbox_config(*, n: int | None = None, max_iterations: int = 10, run_id: str = "") -> RunConfig:
    """The demo's config: the three personas, the scripted agent and the sandbox's own questions."""
    data: dict[str, Any] = {
        "run_id": run_id,
        "agent": {"model": SANDBOX_AGENT, "rps": 1000.0, "concurrency": 64},
        "providers": {k: {"rps": 1000.0, "concurrency": 64} for k in PROVIDER_KINDS},
        "fetch": {"rps": 1000.0, "concurrency": 16},
        "limits": {"max_iterations": max_iterations, "max_trajectories": 64},
        "dataset": {"path": SANDBOX_DATASET},
        "sample": {"n": n},
    }
    return parse_config(data, "<sandbox config>")
