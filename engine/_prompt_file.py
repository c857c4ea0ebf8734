"""Prompt files (docs/how-to/own-agent.md companion, issue 14): a user's own system text and user template, versioned by content.

A prompt file is TOML with `name`, `system`, `user` (a template with named `{fields}`) and `schema_version`. Its
canonical content is the sorted JSON of those four keys; the recorded version is `<name>@<first 12 hex of sha256>`
and the canonical bytes are stored as a blob whose digest is that sha256, so replay and a later re-judge can use
exactly the recorded words without the file.
"""

from __future__ import annotations

import hashlib
import re
import string
import tomllib
from pathlib import Path

import msgspec

from searchtrace.store import BadInput, read_bounded, shown

_NAME_RE = re.compile(r"^[A-Za-z0-9._/-]+$")


class PromptFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The four keys of a prompt file; `user` names its fields as `{field}` (str.format syntax)."""

    name: str
    system: str
    user: str = "{question}"
    schema_version: int = 1

    def canonical(self) -> bytes:
        """The bytes the version is computed from (and stored as the prompt's blob)."""
        return msgspec.json.encode(self, order="sorted")

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()

    def version(self) -> str:
        return f"{self.name}@{self.sha256()[:12]}"


def is_file_version(version: str) -> bool:
    """Built-in versions look like `judge/1`; prompt-file versions like `name@0123456789ab`."""
    return re.fullmatch(r".+@[0-9a-f]{12}", version) is not None


def template_fields(template: str) -> list[str]:
    """The named fields a template uses, each a plain `{name}`: a conversion (`{question!r}`), a format spec
    (`{question:>30000000}`), an attribute or an index (`{question.x}`, `{question[0]}`) is a ValueError, so a
    template that loads also formats, in bounded memory (docs/concepts/security.md)."""
    out: list[str] = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if conversion is not None or spec:
            raise ValueError(f"{shown[:60]}: only plain fields like {{question}}, no conversion or format spec")
        if not field.isidentifier():
            raise ValueError(f"{shown[:60]}: only plain named fields like {{question}}")
        out.append(field)
    return out


def check(pf: PromptFile, allowed: frozenset[str], schema_version: int, where: str) -> PromptFile:
    """Validate a decoded prompt file against the fields its user template may name."""
    if not _NAME_RE.match(pf.name):
        raise BadInput(f"{where}: key name: {shown(pf.name)} may only hold letters, digits, '.', '_', '/' and '-'")
    if not pf.system.strip():
        raise BadInput(f"{where}: key system: must not be empty")
    try:
        fields = template_fields(pf.user)
    except ValueError as exc:
        raise BadInput(f"{where}: key user: not a valid template ({exc})") from None
    for f in fields:
        if f not in allowed:
            raise BadInput(f"{where}: key user: unknown template field {{{f}}} (known: {', '.join(sorted(allowed))})")
    if pf.schema_version != schema_version:
        raise BadInput(f"{where}: key schema_version: {pf.schema_version} is not supported (this version answers {schema_version})")
    if "document" in allowed and "document" not in fields:  # a judge that is never shown the page judges nothing
        raise BadInput(f"{where}: key user: the template must name {{document}} (where the page goes)")
    return pf


def decode_file(data: bytes, where: str) -> PromptFile:
    """TOML bytes -> PromptFile, every fault one BadInput naming `where`."""
    try:
        doc = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{where}: not a valid TOML prompt file ({exc})") from None
    try:
        return msgspec.convert(doc, PromptFile, strict=True)
    except msgspec.ValidationError as exc:
        raise BadInput(f"{where}: not a prompt file ({exc})") from None


def load(path: str | Path, allowed: frozenset[str], schema_version: int) -> PromptFile:
    """Read, parse and check a prompt file."""
    p = Path(path)
    data = read_bounded(p, "text", "prompt file")
    return check(decode_file(data, str(p)), allowed, schema_version, str(p))


def from_blob(data: bytes, where: str) -> PromptFile:
    """The canonical bytes stored at recording time, back to the prompt they were made from."""
    try:
        return msgspec.json.decode(data, type=PromptFile)
    except msgspec.DecodeError as exc:
        raise BadInput(f"{where}: stored prompt blob does not decode ({exc})") from None
