"""The run config (TOML -> msgspec Structs), validated on load: every bad value is a BadInput naming file and key.

```toml
run_id = "my-run"                 # optional; default: derived from the config's identity hash
[run]
epochs = 1                        # records every (provider, question) cell this many times (docs/concepts/statistics.md)
[agent]
model = "gpt-5.4"
api = "chat"                      # or "responses" (OpenAI's Responses API), "anthropic" (Messages), "gemini"
base_url = "https://api.openai.com/v1"
key_env = "OPENAI_API_KEY"
rps = 5.0                         # requests/s; burst rps/10 per 0.1 s unless `burst` is set
concurrency = 8
params = { temperature = 0 }      # extra chat-completions body fields
[limits]
max_iterations = 10
max_trajectories = 16             # trajectories in flight
max_attempts = 3                  # a cell that ended in `error` is recorded again by the next `record`, up to this
[fetch]                           # the shared fetch backend (Jina Reader)
timeout_s = 15.0
max_bytes = 2_097_152
concurrency = 4
cache_dir = ".searchtrace-cache/fetch"
# one [providers.<name>] table per provider compared; `kind` defaults to the table name, any search provider
# (docs/how-to/providers.md; the list: `searchtrace search --help`); `params` are merged over the adapter's defaults
{providers}
[dataset]
path = "questions.jsonl"          # JSONL / CSV / Parquet with qid, question, answer (+ strata); or "sandbox"
# columns = { qid = "id", question = "problem", answer = "answers" }   # other column names (docs/how-to/compare.md)
[sample]
n = 100
seed = "searchtrace"
```

Environment overrides of base URLs (they win over the file): `SEARCHTRACE_AGENT_BASE_URL` (or `OPENAI_BASE_URL`),
`SEARCHTRACE_FETCH_BASE_URL` (or `SEARCHTRACE_JINA_BASE_URL`), `SEARCHTRACE_<PROVIDER>_BASE_URL` (provider table
name upper-cased, `-` as `_`). Rates, concurrency and timeouts left out (or 0) take adapters._registry's defaults.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.adapters import (
    API_ENDPOINTS,
    CHAT_APIS,
    HOSTED_API,
    HOSTED_ENDPOINT,
    HOSTED_LAYERS,
    SEARCH_PROVIDERS,
    base_url_problem,
    default_endpoint,
    endpoints,
    paper_providers,
    sandbox_endpoint,
    search_provider_names,
    specs,
)
from searchtrace.engine._prompts import get_prompt
from searchtrace.engine._sample import columns_problem
from searchtrace.store import BadInput, read_bounded, shown

# docs/concepts/security.md: at most this many epochs of a cell, wherever an epoch enters (--epochs, [run] epochs, the proxy's
# X-Searchtrace-Epoch header, trace-file and Inspect imports); a plan of that many is small, and every epoch fits 64 bits
MAX_EPOCHS = 1000


def epochs_problem(value: int) -> str | None:
    """Why `value` is not an epoch (count), or None: an integer from 1 to MAX_EPOCHS."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer from 1 to {MAX_EPOCHS}, got {repr(value)[:40]}"
    if not 1 <= value <= MAX_EPOCHS:
        shown = str(value) if abs(value) < 10**12 else f"{'-' if value < 0 else ''}~2^{value.bit_length() - 1}"
        return f"must be an integer from 1 to {MAX_EPOCHS}, got {shown}"
    return None

# every search provider the registry found (docs/how-to/providers.md), and the paper's three (the default demo)
PROVIDER_KINDS = search_provider_names()
PAPER_KINDS = paper_providers()
SANDBOX_AGENT = "sandbox-agent"
SANDBOX_DATASET = "sandbox"


class _Cfg(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class EndpointCfg(_Cfg):
    """Where and how fast; a missing value takes the endpoint kind's default from adapters._registry."""

    base_url: str = ""
    key_env: str = ""
    rps: float = 0.0  # 0: the kind's default (conservative free-plan limits for real providers)
    burst: int = 0  # 0: rps/10 per 0.1 s, no first-second burst
    concurrency: int = 0  # 0: the kind's default
    timeout_s: float = 0.0  # 0: the kind's default
    max_retries: int = 4
    max_wait_s: float = 60.0  # cap of one backoff wait (a stated Retry-After is honoured up to this)
    # docs/how-to/scale.md: the quota domain whose rate this endpoint shares with others ("firecrawl:team-x"); recorded in
    # run.started (absent when unset, so earlier configs keep their bytes), not part of the run id
    quota: str = ""


class AgentCfg(EndpointCfg):
    model: str = ""  # required (checked in _check)
    # "chat" (POST chat/completions), "responses" (POST responses), "anthropic" (POST v1/messages) or "gemini"
    # (POST v1beta/models/<model>:generateContent), checked in _check
    api: str = "chat"
    prompt_version: str = "agent/1"
    prompt_file: str = ""  # a TOML prompt file; sets prompt_version to `<name>@<sha256[:12]>` on load
    params: dict[str, Any] = {}


class ProviderCfg(EndpointCfg):
    kind: str = ""  # defaults to the table name
    params: dict[str, Any] = {}
    # docs/how-to/hosted.md: a hosted search layer's model (default: the agent's); UNSET (never encoded) otherwise
    model: str | msgspec.UnsetType = msgspec.UNSET


class FetchCfg(EndpointCfg):
    backend: str = "jina"
    max_bytes: int = 2 * 1024 * 1024
    cache_dir: str = ".searchtrace-cache/fetch"  # "" disables the cache


class LimitsCfg(_Cfg):
    max_iterations: int = 10
    max_trajectories: int = 16
    max_attempts: int = 3  # attempts per (question, provider) cell whose trajectories end in `error` (not in the run id)


class RunCfg(_Cfg):
    """`[run]`: repeats. Not in the run id, so raising `epochs` later records the missing epochs of the same run."""

    epochs: int = 1


class DatasetCfg(_Cfg):
    path: str
    id: str = ""
    # docs/how-to/compare.md: role -> the file's column, e.g. { qid = "id", question = "problem", answer = "answers" }; a role left
    # out is read from its default columns (engine._sample.COLUMN_ROLES)
    columns: dict[str, str] = {}


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
    run: RunCfg = msgspec.field(default_factory=RunCfg)
    prices: dict[str, Any] = {}  # docs/reference/prices.md price table (engine._prices checks it on load); the report may use it
    sandbox: bool = False  # set by `--sandbox` / the demo, never read from the file

    def identity(self) -> dict[str, Any]:
        """What makes two runs the same protocol (not rates, base URLs or concurrency): hashed into run_id."""
        prompt = get_prompt(self.agent.prompt_version)
        agent: dict[str, Any] = {"model": self.agent.model, "params": self.agent.params}
        if self.agent.api != "chat":  # a chat run keeps the run id it had before the key existed
            agent["api"] = self.agent.api
        return {
            "agent": agent,
            "prompt": {"version": prompt.version, "sha256": prompt.sha256},
            "max_iterations": self.limits.max_iterations,
            "providers": {n: {"kind": p.kind, "params": p.params} for n, p in sorted(self.providers.items())},
            "fetch": {"backend": self.fetch.backend, "timeout_s": self.fetch.timeout_s, "max_bytes": self.fetch.max_bytes},
            "dataset": self.dataset.id,
            "sample": {"n": self.sample.n, "seed": self.sample.seed},
            "sandbox": self.sandbox,
            # a mapping changes what is recorded; a config without one keeps the run id it had before the key existed
            **({"dataset_columns": dict(sorted(self.dataset.columns.items()))} if self.dataset.columns else {}),
        }

    def identity_sha256(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self.identity(), order="sorted")).hexdigest()

    def effective_run_id(self) -> str:
        return self.run_id or f"run-{self.identity_sha256()[:12]}"

    def to_event(self) -> dict[str, Any]:
        """The full config for `run.started` (key variable names only, never key values)."""
        prompt = get_prompt(self.agent.prompt_version)
        body: dict[str, Any] = msgspec.to_builtins(self)
        if self.run.epochs == 1:  # the default leaves run.started of a single-epoch run byte for byte as before
            del body["run"]
        if not self.prices:
            del body["prices"]
        if not self.agent.prompt_file:
            del body["agent"]["prompt_file"]  # configs without one keep their run.started bytes
        if self.agent.api == "chat":
            del body["agent"]["api"]  # likewise the default API
        if not self.dataset.columns:
            del body["dataset"]["columns"]  # and a dataset read without a column mapping
        for section in (body["agent"], body["fetch"], *body["providers"].values()):
            if not section.get("quota"):
                section.pop("quota", None)  # likewise an endpoint without a quota domain
        body["prompt"] = {"version": prompt.version, "sha256": prompt.sha256}
        # docs/how-to/providers.md: page text in the surface is a recorded choice (a derived key, like `prompt`)
        body["page_text"] = {name: bool((cls := SEARCH_PROVIDERS.get(p.kind)) is not None and cls.page_text(p.params))
                             for name, p in sorted(self.providers.items())}
        body["identity_sha256"] = self.identity_sha256()
        body["run_id"] = self.effective_run_id()
        return body


# the sample above, `{providers}` standing for each paper provider's own sample table (ProviderSpec.sample_config)
EXAMPLE_CONFIG = (__doc__.split("```toml\n", 1)[1].split("```", 1)[0] if __doc__ else "").replace(
    "{providers}\n", "".join(s.sample_config for s in specs() if s.paper))

_ID_RE = re.compile(r"[A-Za-z0-9._-]+")  # always fullmatch: `$` would let a trailing newline through
_QUOTA_RE = re.compile(r"[A-Za-z0-9._:/-]{1,200}")  # a quota domain's name, e.g. "firecrawl:team-x"
# Sane bounds of the pacing numbers: outside them a run hangs (rps 1e-9, inf) or never waits at all (timeout inf).
RPS_RANGE = (0.01, 1e6)
SECONDS_RANGE = (0.001, 86_400.0)


def rate_problem(name: str, value: float, lo_hi: tuple[float, float], *, zero_ok: bool = False) -> str | None:
    """Why a rate or a duration is unusable (None when it is fine); nan, inf and absurd values included."""
    lo, hi = lo_hi
    if zero_ok and value == 0:
        return None
    if not math.isfinite(value) or not lo <= value <= hi:
        return f"{name} must be a number from {lo:g} to {hi:g}{' (or 0)' if zero_ok else ''}, got {value}"
    return None


def cache_dir_problem(cache_dir: str) -> str | None:
    """Why the fetch cache cannot live there (a file in the way, a folder without write access), before any call."""
    path = Path(cache_dir)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return None
        probe = probe.parent
    if not probe.is_dir():
        return f"{cache_dir!r} cannot be a folder: {str(probe)!r} is a file"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{cache_dir!r}: no permission to write in {str(probe)!r}"
    return None


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

    if cfg.run_id and not _ID_RE.fullmatch(cfg.run_id):
        raise bad("run_id", f"{shown(cfg.run_id)} may only hold letters, digits, '.', '_' and '-'")
    if not cfg.agent.model.strip():
        raise bad("agent.model", "required (the chat model name)")
    if cfg.agent.api not in CHAT_APIS:
        raise bad("agent.api", f"must be one of {', '.join(repr(a) for a in CHAT_APIS)}, got {cfg.agent.api!r}"[:200])
    if not cfg.providers:
        raise bad("providers", "at least one [providers.<name>] table is required")
    for name, p in cfg.providers.items():
        if not _ID_RE.fullmatch(name):
            raise bad(f"providers.{name}", "provider names may only hold letters, digits, '.', '_' and '-'")
        if p.kind not in SEARCH_PROVIDERS and p.kind not in HOSTED_LAYERS:
            raise bad(f"providers.{name}.kind", f"unknown provider {p.kind!r} "
                                                f"(known: {', '.join((*SEARCH_PROVIDERS, *HOSTED_LAYERS))})")
        if not isinstance(p.model, msgspec.UnsetType) and p.kind not in HOSTED_LAYERS:
            raise bad(f"providers.{name}.model", "only a hosted search layer has a model (docs/how-to/hosted.md)")
    if cfg.fetch.backend != "jina":
        raise bad("fetch.backend", f"unknown fetch backend {cfg.fetch.backend!r} (known: jina)")
    endpoints: list[tuple[str, EndpointCfg]] = [("agent", cfg.agent), ("fetch", cfg.fetch)]
    endpoints += [(f"providers.{n}", p) for n, p in cfg.providers.items()]
    domains: dict[str, tuple[float, str]] = {}  # quota domain -> (its rate, the first endpoint naming it)
    for where, e in endpoints:
        for name, v in (("rps", e.rps), ("timeout_s", e.timeout_s), ("max_wait_s", e.max_wait_s)):
            if not v > 0:
                raise bad(f"{where}.{name}", f"must be > 0, got {v}")
            problem = rate_problem(name, v, RPS_RANGE if name == "rps" else SECONDS_RANGE)
            if problem:
                raise bad(f"{where}.{name}", problem.removeprefix(f"{name} "))
        if e.quota and not _QUOTA_RE.fullmatch(e.quota):
            raise bad(f"{where}.quota", f"{e.quota[:80]!r} may only hold letters, digits and '.', '_', '-', ':', '/'")
        if e.quota and domains.setdefault(e.quota, (e.rps, where))[0] != e.rps:
            first = domains[e.quota]
            raise bad(f"{where}.rps", f"{e.rps} but {first[1]}.rps = {first[0]}: the endpoints naming quota "
                      f"{e.quota!r} share its one rate, set the same rps on each (docs/how-to/quotas.md)")
        for name, n in (("concurrency", e.concurrency - 1), ("burst", e.burst), ("max_retries", e.max_retries)):
            if n < 0:
                raise bad(f"{where}.{name}", f"must be >= {1 if name == 'concurrency' else 0}, got {getattr(e, name)}")
    for key, ivalue in (
        ("fetch.max_bytes", cfg.fetch.max_bytes),
        ("limits.max_iterations", cfg.limits.max_iterations),
        ("limits.max_trajectories", cfg.limits.max_trajectories),
        ("limits.max_attempts", cfg.limits.max_attempts),
        ("run.epochs", cfg.run.epochs),
    ):
        if ivalue < 1:
            raise bad(key, f"must be >= 1, got {ivalue}")
    if (problem := epochs_problem(cfg.run.epochs)) is not None:
        raise bad("run.epochs", problem)
    for key, url in [("agent.base_url", cfg.agent.base_url), ("fetch.base_url", cfg.fetch.base_url)] + [
        (f"providers.{n}.base_url", p.base_url) for n, p in cfg.providers.items()
    ]:
        if (problem := base_url_problem(url)) is not None:
            raise bad(key, problem)
        if not re.match(r"https?://[^/\s]+", url):
            raise bad(key, f"{url!r} is not an http(s) URL")
    if cfg.fetch.cache_dir and (problem := cache_dir_problem(cfg.fetch.cache_dir)):
        raise bad("fetch.cache_dir", problem)
    if cfg.sample.n is not None and cfg.sample.n < 1:
        raise bad("sample.n", f"must be >= 1, got {cfg.sample.n}")
    if cfg.prices:
        from searchtrace.engine._prices import parse_prices

        parse_prices(cfg.prices, f"{src}: [prices]")
    if cfg.dataset.path != SANDBOX_DATASET and not Path(cfg.dataset.path).is_file():
        raise bad("dataset.path", f"no such file {cfg.dataset.path!r}")
    if (problem := columns_problem(cfg.dataset.columns)) is not None:
        raise bad("dataset.columns", problem)


def hosted_endpoint(kind: str) -> str | None:
    """The model API endpoint a hosted search layer is asked at (docs/how-to/hosted.md), None for a search provider."""
    return HOSTED_ENDPOINT[HOSTED_API[kind]] if kind in HOSTED_LAYERS else None


def _fill_endpoint(e: EndpointCfg, kind: str) -> None:
    known = endpoints()
    if kind not in known:
        return
    d = default_endpoint(kind)
    e.base_url = e.base_url or known[kind].default_base_url  # the real default: env overrides come later, in apply_env
    e.key_env = e.key_env or d.key_env or ""
    e.rps = e.rps or d.rps
    e.concurrency = e.concurrency or d.concurrency
    e.timeout_s = e.timeout_s or d.timeout_s


def _fill_defaults(cfg: RunConfig, base_dir: Path | None) -> None:
    for name, p in cfg.providers.items():
        p.kind = p.kind or name
        _fill_endpoint(p, hosted_endpoint(p.kind) or p.kind)
        if p.kind in SEARCH_PROVIDERS:  # the effective params, so run.started and the run id say what was sent
            p.params = {**SEARCH_PROVIDERS[p.kind].default_params(), **p.params}
    _fill_endpoint(cfg.agent, API_ENDPOINTS.get(cfg.agent.api, "openai"))
    if cfg.agent.prompt_file:
        from searchtrace.engine._prompts import load_prompt_file

        path = Path(cfg.agent.prompt_file)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        cfg.agent.prompt_file = str(path)
        cfg.agent.prompt_version = load_prompt_file(path).version
    _fill_endpoint(cfg.fetch, cfg.fetch.backend)
    if base_dir is not None and cfg.dataset.path != SANDBOX_DATASET and not Path(cfg.dataset.path).is_absolute():
        cfg.dataset.path = str(base_dir / cfg.dataset.path)
    if not cfg.dataset.id:
        if cfg.dataset.path == SANDBOX_DATASET:
            cfg.dataset.id = SANDBOX_DATASET
        elif Path(cfg.dataset.path).is_file():
            data = Path(cfg.dataset.path).read_bytes()
            cfg.dataset.id = f"{Path(cfg.dataset.path).name}:{hashlib.sha256(data).hexdigest()[:12]}"


def apply_env(cfg: RunConfig, env: dict[str, str] | None = None) -> None:
    """Base URL overrides from the environment (docs/reference/cli.md)."""
    env = dict(os.environ) if env is None else env
    agent_env = endpoints()[API_ENDPOINTS.get(cfg.agent.api, "openai")].base_url_env  # OPENAI_BASE_URL, ANTHROPIC_…
    if v := env.get("SEARCHTRACE_AGENT_BASE_URL") or env.get(agent_env):
        cfg.agent.base_url = v
    if v := env.get("SEARCHTRACE_FETCH_BASE_URL") or env.get("SEARCHTRACE_JINA_BASE_URL"):
        cfg.fetch.base_url = v
    for name, p in cfg.providers.items():
        if v := env.get(f"SEARCHTRACE_{name.upper().replace('-', '_')}_BASE_URL"):
            p.base_url = v


def point_at_sandbox(cfg: RunConfig, root: str) -> None:
    """Every endpoint at the sandbox world rooted at `root`; the agent becomes the scripted `sandbox-agent`."""
    cfg.sandbox = True
    cfg.agent.base_url = sandbox_endpoint(API_ENDPOINTS.get(cfg.agent.api, "openai"), root).base_url
    if not cfg.agent.model.startswith("sandbox-"):
        cfg.agent.model = SANDBOX_AGENT
    cfg.fetch.base_url = sandbox_endpoint("jina", root).base_url
    for p in cfg.providers.values():
        p.base_url = sandbox_endpoint(hosted_endpoint(p.kind) or p.kind, root).base_url


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
    raw = read_bounded(p, "text", "config")
    try:
        data = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{p}: not valid TOML ({exc})") from None
    cfg = parse_config(data, str(p), p.parent)
    apply_env(cfg, env)
    _check(cfg, str(p))
    return cfg


def sandbox_config(
    *, n: int | None = None, max_iterations: int = 10, run_id: str = "", cache_dir: str = "", epochs: int = 1,
    providers: tuple[str, ...] | None = None, api: str = "chat",
) -> RunConfig:
    """The demo's config: the personas (default the paper's three), the scripted agent asked over `api` and the
    sandbox's questions."""
    if providers is None:
        providers = paper_providers()
    agent: dict[str, Any] = {"model": SANDBOX_AGENT, "rps": 10_000.0, "concurrency": 64, "timeout_s": 10.0}
    if api != "chat":  # the default keeps the demo's config (and run id) as it was
        agent["api"] = api
    data: dict[str, Any] = {
        "run_id": run_id,
        "agent": agent,
        "providers": {k: {"rps": 10_000.0, "concurrency": 32, "timeout_s": 10.0} for k in providers},
        "fetch": {"rps": 10_000.0, "concurrency": 16, "timeout_s": 10.0, "cache_dir": cache_dir},
        "limits": {"max_iterations": max_iterations, "max_trajectories": 64},
        "dataset": {"path": SANDBOX_DATASET},
        "sample": {"n": n},
        "run": {"epochs": epochs},
    }
    return parse_config(data, "<sandbox config>")
