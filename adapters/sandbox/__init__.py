"""The sandbox world of SPEC §11: an offline internet speaking the real providers' wire formats."""

from adapters.sandbox.app import create_app
from adapters.sandbox.corpus import Corpus, Page, Question, build_corpus, question_rows, write_questions_jsonl
from adapters.sandbox.faults import KINDS as FAULT_KINDS
from adapters.sandbox.faults import FaultPlan, parse_rates
from adapters.sandbox.serve import base_urls, env_exports, free_port, running, serve
from adapters.sandbox.world import World, default_world

__all__ = [
    "FAULT_KINDS",
    "Corpus",
    "FaultPlan",
    "Page",
    "Question",
    "World",
    "base_urls",
    "build_corpus",
    "create_app",
    "default_world",
    "env_exports",
    "free_port",
    "parse_rates",
    "question_rows",
    "running",
    "serve",
    "write_questions_jsonl",
]
