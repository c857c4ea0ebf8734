"""An Inspect AI task whose model searches with Inspect's own `web_search()` tool run inside the model API (OpenAI's
Responses web_search, Claude's web_search, Gemini's grounding, Perplexity's Agent API), answered by the searchtrace
sandbox's hosted layers (makes tests/data/inspect/hosted logs).

    searchtrace sandbox serve --port 8799 &
    inspect eval tests/data/inspect/hosted_task.py --model openai/sandbox-agent -M responses_api=true \\
        --model-base-url http://127.0.0.1:8799/openai/v1 --log-dir tests/data/inspect/hosted
    (and anthropic/sandbox-agent at /anthropic, google/sandbox-agent at /gemini, perplexity/sandbox-agent at
    /perplexity; OPENAI_API_KEY etc. = sandbox)

The sandbox serves `sandbox-agent`; the family registered below is what Inspect reads to offer its hosted search.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelInfo, set_model_info
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import web_search

FAMILIES = {"openai": "gpt-5", "anthropic": "claude-sonnet-4-5", "google": "gemini-2.5-flash",
            "perplexity": "sonar"}
for _provider, _family in FAMILIES.items():
    set_model_info(f"{_provider}/sandbox-agent", ModelInfo(family=_family))

QUESTIONS = [
    ("sbx-9ab3167de8", "What is the founding year of Elmwyn Athletic?", "1937"),
    ("sbx-cf5d760f25", "What is the home ground of Kelethe Rovers?", "Brenvek Park"),
]


@task
def hosted_search() -> Task:
    return Task(
        dataset=[Sample(id=qid, input=q, target=a) for qid, q, a in QUESTIONS],
        solver=[use_tools(web_search(["openai", "anthropic", "gemini", "perplexity"])), generate()],
        scorer=includes(),
    )
