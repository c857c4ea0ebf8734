"""An Inspect AI task whose agent searches the web through the searchtrace sandbox (makes tests/data/inspect logs).

    searchtrace sandbox serve --port 8799 &
    SEARCHTRACE_SANDBOX_URL=http://127.0.0.1:8799 SANDBOX_API_KEY=sandbox \\
    SANDBOX_BASE_URL=http://127.0.0.1:8799/openai/v1 inspect eval tests/data/inspect/search_task.py \\
        -T provider=tavily --model openai-api/sandbox/sandbox-agent --log-dir tests/data/inspect/logs
"""

import json
import os

import httpx
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

SANDBOX = os.environ.get("SEARCHTRACE_SANDBOX_URL", "http://127.0.0.1:8765")
QUESTIONS = [
    ("sbx-9ab3167de8", "What is the founding year of Elmwyn Athletic?", "1937"),
    ("sbx-cf5d760f25", "What is the home ground of Kelethe Rovers?", "Brenvek Park"),
]


@tool
def web_search(provider: str = "tavily"):
    async def execute(query: str) -> str:
        """Search the web and return the ranked results as JSON.

        Args:
            query: What to search for.
        """
        async with httpx.AsyncClient(timeout=HANG_S) as client:
            if provider == "brave":
                r = await client.get(f"{SANDBOX}/brave/res/v1/web/search", params={"q": query, "count": 5},
                                     headers={"X-Subscription-Token": "sandbox"})
            else:
                r = await client.post(f"{SANDBOX}/tavily/search", json={"query": query, "max_results": 5},
                                      headers={"Authorization": "Bearer sandbox"})
        return json.dumps(r.json())

    return execute


@tool
def read_page():
    async def execute(url: str) -> str:
        """Read a web page as markdown.

        Args:
            url: The page's URL.
        """
        async with httpx.AsyncClient(timeout=HANG_S) as client:
            r = await client.get(f"{SANDBOX}/jina/{url}", headers={"Accept": "text/plain"})
        return r.text

    return execute


@task
def sandbox_search(provider: str = "tavily") -> Task:
    return Task(
        dataset=[Sample(id=qid, input=q, target=a) for qid, q, a in QUESTIONS],
        solver=[system_message("Answer with the tools; end with `FINAL ANSWER: <answer>`."),
                use_tools(web_search(provider), read_page()), generate()],
        scorer=includes(),
    )
