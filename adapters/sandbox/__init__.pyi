from searchtrace.adapters.sandbox import _faults
from searchtrace.adapters.sandbox._app import base_urls as base_urls
from searchtrace.adapters.sandbox._app import create_app as create_app
from searchtrace.adapters.sandbox._app import create_apps as create_apps
from searchtrace.adapters.sandbox._corpus import Corpus as Corpus
from searchtrace.adapters.sandbox._corpus import Page as Page
from searchtrace.adapters.sandbox._corpus import Question as Question
from searchtrace.adapters.sandbox._corpus import build_corpus as build_corpus
from searchtrace.adapters.sandbox._corpus import question_rows as question_rows
from searchtrace.adapters.sandbox._corpus import write_questions_jsonl as write_questions_jsonl
from searchtrace.adapters.sandbox._faults import FaultPlan as FaultPlan
from searchtrace.adapters.sandbox._faults import parse_rates as parse_rates
from searchtrace.adapters.sandbox._faults import routes as routes
from searchtrace.adapters.sandbox._inproc import ROOT as ROOT
from searchtrace.adapters.sandbox._inproc import InProcess as InProcess
from searchtrace.adapters.sandbox._inproc import in_process as in_process
from searchtrace.adapters.sandbox._serve import EXAMPLES as EXAMPLES
from searchtrace.adapters.sandbox._serve import Served as Served
from searchtrace.adapters.sandbox._serve import env_exports as env_exports
from searchtrace.adapters.sandbox._serve import free_port as free_port
from searchtrace.adapters.sandbox._serve import own_root_url as own_root_url
from searchtrace.adapters.sandbox._serve import running as running
from searchtrace.adapters.sandbox._serve import running_all as running_all
from searchtrace.adapters.sandbox._serve import serve as serve
from searchtrace.adapters.sandbox._serve import wait_listening as wait_listening
from searchtrace.adapters.sandbox._world import World as World
from searchtrace.adapters.sandbox._world import default_world as default_world

FAULT_KINDS = _faults.KINDS
