"""Whole answers end to end: ``replay``, ``serve`` and ``report`` with upstreams that answer in
vLLM 0.34's reasoning and tool-call shapes: a pair
that differs only in a tool argument, or only inside an answer cut off in its thinking,
is a change, and the gate does not pass it unreviewed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import logs
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.runner import ReplaySettings
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.answercells import cells
from tests.support.servers import read_body, serve_app

HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1760000000, "model": "m"}


def tool_call_answer(unit: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": "chatcmpl-tool-" + unit, "name": "get_weather",
                            "arguments": json.dumps({"city": "Paris", "unit": unit})}], "finish": "tool_calls"}


def cut_in_thinking(product: str) -> dict[str, Any]:
    return {"reasoning": f"17 * 23: 17 * 20 = 340, plus 51 = {product}", "finish": "length"}


class VllmLike:
    """An upstream that answers every chat request with one answer, in vLLM 0.34's bytes."""

    def __init__(self, answer: dict[str, Any], thinking_time: float = 0.0) -> None:
        self.answer = answer
        self.thinking_time = thinking_time   # a streamed answer's pause between thinking and answering

    def body(self) -> dict[str, Any]:
        a = self.answer
        calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                 for c in a.get("tool_calls", ())]
        message: dict[str, Any] = {"role": "assistant", "content": a.get("content"), "refusal": None, "audio": None,
                                   "function_call": None, "reasoning": a.get("reasoning")}
        if calls:
            message["tool_calls"] = calls
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1760000000, "model": "m",
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": a["finish"],
                             "stop_reason": None}],
                "usage": {"prompt_tokens": 12, "total_tokens": 42, "completion_tokens": 30}}

    def stream(self) -> list[bytes]:
        """The frames of the streamed answer; ``b""`` marks the end of the thinking."""
        a, frames = self.answer, []

        def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
            frames.append({**HEAD, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                "finish_reason": finish}]})
        chunk({"role": "assistant", "content": ""})
        if a.get("reasoning"):
            for piece in (a["reasoning"][:10], a["reasoning"][10:]):
                chunk({"reasoning": piece})
        frames.append({})
        if a.get("content"):
            chunk({"content": a["content"]})
        for k, c in enumerate(a.get("tool_calls", ())):
            chunk({"tool_calls": [{"id": c["id"], "type": "function", "index": k, "function": {"name": c["name"]}}]})
            chunk({"tool_calls": [{"index": k, "function": {"arguments": c["arguments"]}}]})
        chunk({"content": ""}, a["finish"])
        frames.append({**HEAD, "choices": [], "usage": {"prompt_tokens": 12, "total_tokens": 42,
                                                        "completion_tokens": 30}})
        return [b"data: " + json.dumps(f).encode() + b"\n\n" if f else b"" for f in frames] + [b"data: [DONE]\n\n"]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b'{"detail":"Not Found"}'})
            return
        streamed = bool(json.loads(body).get("stream"))
        kind = b"text/event-stream; charset=utf-8" if streamed else b"application/json"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        if not streamed:
            await send({"type": "http.response.body", "body": json.dumps(self.body()).encode()})
            return
        for frame in self.stream():
            if not frame:
                await asyncio.sleep(self.thinking_time)
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def replayed(tmp_path: Path, base: dict[str, Any], cand: dict[str, Any],
             thinking_time: float = 0.0, body: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    log = tmp_path / "log.jsonl"
    body = body or {"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}
    log.write_text(json.dumps(body) + "\n")
    with serve_app(VllmLike(base, thinking_time)) as b, serve_app(VllmLike(cand, thinking_time)) as c:
        settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, b, "m"),
                                  candidate=Upstream(Side.CANDIDATE, c, "m"), fmt=logs.LogFormat.BODIES)
        run_replay(settings, tmp_path / "out", None, resume=False)
    store = Store.open(tmp_path / "out")
    try:
        [pair] = store.pairs(store.latest_run().id)   # type: ignore[union-attr]
        return tmp_path / "out", {"outcome": pair["outcome"], "kinds": {s["kind"] for s in pair["signals"] or ()}}
    finally:
        store.close()


def report_exit(out: Path) -> int:
    # (one pair: fewer than the default --min-compared, which is not the subject here)
    return cli.shadowdiff("report", str(out), "--min-compared", "1").returncode


def test_replay_finds_a_changed_tool_argument_and_the_gate_waits(tmp_path: Path) -> None:
    out, pair = replayed(tmp_path, tool_call_answer("celsius"), tool_call_answer("fahrenheit"))
    assert pair["outcome"] in ("near", "divergent") and "structured" in pair["kinds"]
    # no thinking: the first token is the first answer token, and the report shows one time
    assert "first answer token" not in (out / "report.html").read_text()
    assert report_exit(out) == 2   # INCOMPLETE: a changed pair nobody reviewed is not a PASS


def test_reports_show_the_whole_answer_escaped(tmp_path: Path) -> None:
    """report.html: the reasoning collapsed, the tool calls in a table with the changed
    argument marked, markup in an answer never HTML; report.md: every part in a code block
    that backticks inside the answer cannot end."""
    fenced = "```\n</details>"
    out, _ = replayed(tmp_path, {**tool_call_answer("celsius"), "reasoning": "It is cold."},
                      {**tool_call_answer("fahrenheit"), "reasoning": f"<script>alert(1)</script>{fenced}"})
    html = (out / "report.html").read_text()
    base, cand = cells(html, "calls", "l"), cells(html, "calls", "r")
    assert base[0] == cand[0] == "get_weather"   # the name, then the arguments
    assert "<del>celsius</del>" in (base[1] or "") and "<ins>fahrenheit</ins>" in (cand[1] or "")
    assert html.count('<details class="reasoning">') == 1   # both sides' reasoning, line beside line
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    md = (out / "report.md").read_text()
    assert "````text\n<script>alert(1)</script>" + fenced + "\n````" in md
    # a one-message request without tools: no conversation to show, only the settings it was sent with
    assert '<summary>the request: sent with <bdi>temperature 0.0, n 1, max_tokens 256</bdi></summary>' in html
    assert '<div class="turn">' not in html
    assert md.count("Tool call 0:") == 2 and '"unit": "fahrenheit"' in md


def test_replay_finds_a_change_inside_the_thinking(tmp_path: Path) -> None:
    _, pair = replayed(tmp_path, cut_in_thinking("391"), cut_in_thinking("381"))
    assert pair["outcome"] != "identical" and "numbers" in pair["kinds"]


def test_identical_tool_calls_with_other_ids_are_identical(tmp_path: Path) -> None:
    same = tool_call_answer("celsius")
    other_id = {**same, "tool_calls": [{**same["tool_calls"][0], "id": "chatcmpl-tool-other"}]}
    out, pair = replayed(tmp_path, same, other_id)
    assert pair["outcome"] == "identical" and report_exit(out) == 0


def stored_pair(path: Path) -> Any:
    """The one pair the proxy stores, once it is written (after the client's answer)."""
    store = Store.open(path)
    try:
        def stored() -> list[Any]:
            run = store.latest_run("serve")
            return list(store.pairs(run.id)) if run is not None else []
        deadline = time.monotonic() + 10
        while not (pairs := stored()) and time.monotonic() < deadline:
            time.sleep(0.05)
        [pair] = pairs
        return pair
    finally:
        store.close()


def test_serve_finds_a_changed_tool_argument(start_proxy: Callable[..., tuple[str, Any]], tmp_path: Path) -> None:
    with serve_app(VllmLike(tool_call_answer("celsius"))) as b, \
            serve_app(VllmLike(tool_call_answer("fahrenheit"))) as c:
        url, _ = start_proxy(primary=b, shadow=c, store=str(tmp_path / "store"))
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Weather?"}],
                                                temperature=0, stream=False)
        # the client gets the primary's tool call, untouched
        assert answer.choices[0].message.tool_calls[0].function.arguments == '{"city": "Paris", "unit": "celsius"}'
        pair = stored_pair(tmp_path / "store")
    assert pair["outcome"] in ("near", "divergent")
    assert "structured" in {s["kind"] for s in pair["signals"]}


def thought_then_answered(answer: str) -> dict[str, Any]:
    return {"reasoning": "17 * 23: 17 * 20 = 340, plus 51 = 391", "content": answer, "finish": "stop"}


def test_time_to_the_first_answer_token_is_after_the_thinking(tmp_path: Path) -> None:
    """Time to first token is to the first thought; time to first answer token to the
    first word of the answer, 0.4 s of thinking later. An answer cut off in its thinking
    has no first answer token."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    out, _ = replayed(tmp_path / "a", thought_then_answered("391."), thought_then_answered("391."), thinking_time=0.4)
    [row] = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    for answer in row["answers"].values():
        assert answer["ttft"] < 0.3 and answer["ttfat"] - answer["ttft"] >= 0.35
    assert "first answer token p50" in (out / "report.html").read_text()
    out, _ = replayed(tmp_path / "b", cut_in_thinking("391"), cut_in_thinking("391"))
    [row] = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert all(a["ttft"] is not None and a["ttfat"] is None for a in row["answers"].values())
    assert "first answer token" not in (out / "report.html").read_text()   # no answer came after any thinking


def test_serve_times_the_first_answer_token(start_proxy: Callable[..., tuple[str, Any]], tmp_path: Path) -> None:
    """The proxy finds both times in the bytes it passes on, for the primary and the shadow."""
    with serve_app(VllmLike(thought_then_answered("391."), 0.4)) as b, \
            serve_app(VllmLike(thought_then_answered("381."), 0.4)) as c:
        url, app = start_proxy(primary=b, shadow=c, store=str(tmp_path / "store"))
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "17 * 23?"}],
                                                temperature=0, stream=True)
        deltas = [chunk.choices[0].delta for chunk in stream if chunk.choices]
        # the client reads the thinking and the answer through the proxy, unchanged
        assert "".join(getattr(d, "reasoning", None) or "" for d in deltas).endswith("= 391")
        assert "".join(d.content or "" for d in deltas) == "391."
        pair = stored_pair(tmp_path / "store")
    for answer in pair.answers.values():
        assert answer.ttft is not None and answer.ttfat is not None and answer.ttfat - answer.ttft >= 0.35
    sums = {(s.name, s.labels["side"]): s.value for m in app.metrics.registry.collect() for s in m.samples
            if s.name.endswith(("time_to_first_token_seconds_sum", "time_to_first_answer_token_seconds_sum"))}
    for side in ("baseline", "candidate"):   # the metrics see the thinking too
        first = sums["shadowdiff_upstream_time_to_first_token_seconds_sum", side]
        assert sums["shadowdiff_upstream_time_to_first_answer_token_seconds_sum", side] - first >= 0.35


def test_report_html_shows_the_tools_offered_and_the_conversation(tmp_path: Path) -> None:
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}}}}
    body = {"messages": [{"role": "system", "content": "Use the tools."},
                         {"role": "user", "content": "What is the weather in Paris?"}], "tools": [weather]}
    out, _ = replayed(tmp_path, tool_call_answer("celsius"), tool_call_answer("fahrenheit"), body=body)
    [view] = re.findall(r'<details class="request">.*?</details>', (out / "report.html").read_text(), re.S)
    assert "2 messages, 1 tools offered" in view and "<code>get_weather</code>" in view and "Use the tools." in view
