"""The official `openai` client's `files` / `batches` and the `anthropic` client's `messages.batches` against
`searchtrace sandbox serve --batch-delay … --fault-rate errored=…,expired=…` (a subprocess on 127.0.0.1): uploads,
creation, polling while in progress, output and error files by custom_id, results in an order not the request's,
errored and expired items, cancel; and every answered item's reply is the online route's reply to the same body."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from searchtrace.adapters.sandbox import FaultPlan

QUESTION = "What is the founding year of Elmwyn Athletic?"
DELAY_S = 1.0


def _serve(*args: str) -> Iterator[dict[str, str]]:
    cmd = [sys.executable, "-c", "from searchtrace.cli import main; main()", "sandbox", "serve", "--port", "0", *args]
    exports: dict[str, str] = {}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc:
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("export "):
                    name, _, value = line[len("export "):].strip().partition("=")
                    exports[name] = value
                if line.startswith("#   openai:"):
                    break
            yield exports
        finally:
            proc.terminate()
            proc.wait(timeout=60)  # a hang guard: a loaded server may take seconds to stop


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    yield from _serve("--batch-delay", str(DELAY_S), "--fault-rate", "errored=0.2,expired=0.1", "--fault-seed", "3")


def _chat_body(i: int, marker: str = "") -> dict[str, object]:
    return {"model": "sandbox-judge", "response_format": {"type": "json_object"},
            "messages": [{"role": "user", "content": f"<question>{QUESTION}</question> item {i} {marker}".strip()}]}


def _wait(poll: object, ended: object) -> list[str]:
    """Every status seen while polling until `ended(status)`."""
    seen: list[str] = []
    hung = time.monotonic() + 120  # a hang guard: the loop ends when the batch has ended
    while time.monotonic() < hung:
        status = poll()  # type: ignore[operator]
        if not seen or seen[-1] != status:
            seen.append(status)
        if ended(status):  # type: ignore[operator]
            return seen
        time.sleep(0.05)
    raise AssertionError(f"never ended: {seen}")


def test_openai_files_and_batches(env: dict[str, str]) -> None:
    from openai import BadRequestError, OpenAI
    with OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox", max_retries=0) as client:
        n = 40
        lines = [{"custom_id": f"item-{i}", "method": "POST", "url": "/v1/chat/completions", "body": _chat_body(i)}
                 for i in range(n)]
        upload = client.files.create(file=("requests.jsonl", io.BytesIO("\n".join(map(json.dumps, lines)).encode())),
                                     purpose="batch")
        assert upload.purpose == "batch" and upload.bytes > 0
        assert client.files.retrieve(upload.id).id == upload.id
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert batch.status == "in_progress" and batch.output_file_id is None
        seen = _wait(lambda: client.batches.retrieve(batch.id).status, lambda s: s not in ("validating", "in_progress"))
        assert seen[0] == "in_progress"
        done = client.batches.retrieve(batch.id)
        assert done.request_counts is not None and done.request_counts.total == n
        out = [json.loads(x) for x in client.files.content(done.output_file_id or "").text.splitlines()]
        err = [json.loads(x) for x in client.files.content(done.error_file_id or "").text.splitlines()]
        assert done.request_counts.completed == len(out) and done.request_counts.failed == len(err)
        assert sorted(r["custom_id"] for r in out + err) == sorted(x["custom_id"] for x in lines)  # each once
        assert [r["custom_id"] for r in out] != sorted((r["custom_id"] for r in out), key=lambda c: int(c.split("-")[1]))
        expired = [r for r in err if r["error"] and r["error"]["code"] == "batch_expired"]
        errored = [r for r in err if r["response"] and r["response"]["status_code"] == 500]
        assert expired and errored and len(expired) + len(errored) == len(err)
        assert done.status == "expired"  # an expired item: the batch expired, its answered items are kept
        # an answered item is the online route's reply to the same body
        first = out[0]
        i = int(first["custom_id"].split("-")[1])
        online = client.chat.completions.create(**_chat_body(i))  # type: ignore[call-overload]
        assert first["response"]["body"]["choices"][0]["message"]["content"] == online.choices[0].message.content
        # cancel while in progress: every item cancelled
        again = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert client.batches.cancel(again.id).status in ("cancelling", "cancelled")
        gone = client.batches.retrieve(again.id)
        assert gone.status == "cancelled" and gone.output_file_id is None
        codes = {json.loads(x)["error"]["code"] for x in client.files.content(gone.error_file_id or "").text.splitlines()}
        assert codes == {"batch_cancelled"}
        with pytest.raises(BadRequestError):
            client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                  completion_window="1h")  # type: ignore[arg-type]


def test_anthropic_message_batches(env: dict[str, str]) -> None:
    from anthropic import Anthropic
    with Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="sandbox", max_retries=0) as client:
        n = 40
        reqs = [{"custom_id": f"item-{i}", "params": {"model": "sandbox-judge", "max_tokens": 512,
                                                      "messages": [{"role": "user", "content": f"{QUESTION} {i}"}]}}
                for i in range(n)]
        batch = client.messages.batches.create(requests=reqs)  # type: ignore[arg-type]
        assert batch.processing_status == "in_progress" and batch.results_url is None
        assert batch.request_counts.processing == n
        seen = _wait(lambda: client.messages.batches.retrieve(batch.id).processing_status, lambda s: s == "ended")
        assert seen == ["in_progress", "ended"]
        done = client.messages.batches.retrieve(batch.id)
        counts = done.request_counts
        assert counts.succeeded + counts.errored + counts.expired == n and counts.errored and counts.expired
        results = list(client.messages.batches.results(batch.id))
        ids = [r.custom_id for r in results]
        assert sorted(ids) == sorted(r["custom_id"] for r in reqs) and ids != [r["custom_id"] for r in reqs]
        kinds = {r.custom_id: r.result.type for r in results}
        assert sum(k == "succeeded" for k in kinds.values()) == counts.succeeded
        ok = next(r for r in results if r.result.type == "succeeded")
        online = client.messages.create(**reqs[int(ok.custom_id.split("-")[1])]["params"])  # type: ignore[call-overload]
        assert ok.result.message.content == online.content  # type: ignore[union-attr]
        again = client.messages.batches.create(requests=reqs[:3])  # type: ignore[arg-type]
        assert client.messages.batches.cancel(again.id).processing_status == "ended"
        assert {r.result.type for r in client.messages.batches.results(again.id)} == {"canceled"}


def test_a_resubmitted_item_draws_its_fault_afresh_and_only_batch_items_draw_batch_kinds() -> None:
    plan = FaultPlan(seed=3, rates={"errored": 0.5})
    draws = [plan.decide("batch", "item-1", attempt) for attempt in range(1, 30)]
    assert "errored" in draws and None in draws  # per submission, not once for good
    assert plan.decide("chat", "item-1", 1) is None and FaultPlan(seed=3, rates={"429": 1.0}).decide("batch", "x", 1) is None
