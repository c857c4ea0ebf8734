"""The agent's versioned system prompt: one frozen text per version, its sha256 recorded in `run.started`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from searchtrace.engine._prompt_file import PromptFile
from searchtrace.store import FINAL_PREFIX, BadInput  # FINAL_PREFIX: the one final-answer rule's home

_PROMPTS: dict[str, str] = {
    "agent/1": (
        "You are a careful research assistant answering a hard factual question with a web search tool.\n"
        "\n"
        "Tools:\n"
        "- search_web(query): returns up to 10 ranked results, each as a <document> block with a doc_id, "
        "rank, domain, title, url, snippet and metadata.\n"
        "- fetch_page(doc_id): returns the full page of an earlier search result as markdown inside <page>. "
        "Only doc_ids returned by search_web earlier in this conversation are accepted.\n"
        "\n"
        "You may call several tools in one turn. Search again with better queries when the results do not "
        "settle the question; fetch a page when its snippet is not enough.\n"
        "Base your answer only on evidence you retrieved. When you are done, reply with one message that "
        f"starts with the exact prefix `{FINAL_PREFIX}` followed by the short answer and nothing else.\n"
    ),
}
# docs/how-to/hosted.md: the same instructions, asking the answer to cite the doc_ids of its evidence
CITE_INSTRUCTION = ("After the answer, cite the doc_ids of the results that support it in square brackets, e.g. "
                    f"`{FINAL_PREFIX} 1937 [d3]`.\n")
_PROMPTS["agent/1-cite"] = _PROMPTS["agent/1"] + CITE_INSTRUCTION

DEFAULT_VERSION = "agent/1"


class Prompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt text with the version and digest that identify it in events."""

    version: str
    text: str
    sha256: str
    user_template: str = "{question}"  # a prompt file's user template (field: question)
    blob: bytes | None = None  # a prompt file's canonical bytes, stored as the blob named by `sha256`

    def user(self, question: str) -> str:
        """The first user turn of a trajectory."""
        return user_message(question) if self.user_template == "{question}" else self.user_template.format(question=question)


# The fields an agent prompt file's user template may name.
FIELDS = frozenset({"question"})
# Prompt files seen by this process (loaded from a file or a recorded blob), by version.
_FILES: dict[str, Prompt] = {}


def from_prompt_file(pf: PromptFile) -> Prompt:
    """A prompt file as the agent's prompt; registered so `get_prompt(version)` finds it in this process."""
    prompt = Prompt(version=pf.version(), text=pf.system, sha256=pf.sha256(), user_template=pf.user, blob=pf.canonical())
    _FILES[prompt.version] = prompt
    return prompt


def load_prompt_file(path: str | Path) -> Prompt:
    """`[agent] prompt_file`: read, check and register an agent prompt file."""
    from searchtrace.engine._prompt_file import load

    return from_prompt_file(load(path, FIELDS, 1))


def get_prompt(version: str = DEFAULT_VERSION) -> Prompt:
    """The frozen prompt of a version; unknown versions are a usage error naming the known ones."""
    if version in _FILES:
        return _FILES[version]
    try:
        text = _PROMPTS[version]
    except KeyError:
        raise BadInput(f"unknown agent prompt version {version!r} (known: {', '.join(sorted(_PROMPTS))})") from None
    return Prompt(version=version, text=text, sha256=hashlib.sha256(text.encode()).hexdigest())


def versions() -> list[str]:
    return sorted(_PROMPTS)


def user_message(question: str) -> str:
    """The first user turn: the question itself, verbatim (the sandbox agent reads it from here)."""
    return question
