"""serve in front of an engine that is not vLLM, shaped as llama.cpp's OpenAI server
answers (``llama_cpp.server``): no ``/health``, no ``/version``, a minimal
``/v1/models``, streams without a usage chunk. The proxy is ready, passes the stream on
to the official ``openai`` client, and counts the answers' tokens from their pieces.
(The real engine's tier is ``tests/engines/``; this one pins the shapes.)"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.proxying import settled, wait_for
from tests.support.servers import serve_app


def llama_like(alias: str, words: list[str], *, usage: bool = True, tokenizer: bool = True,
               cut: bool = False) -> Starlette:
    """A server with llama.cpp's OpenAI shapes: it streams ``words``, no usage chunk; its
    ``/extras/tokenize/count`` counts words (``tokenizer``). ``usage=False``: its bodies
    carry no usage either, as some engines' do. ``cut=True``: its streams end in [DONE]
    without a finish chunk, as llama.cpp's does to a stream another request interrupts.
    ``app.state.models`` counts the calls of ``/v1/models``, which takes llama.cpp's model lock."""
    async def models(request: Request) -> Response:
        request.app.state.models += 1
        return JSONResponse({"object": "list", "data": [{"id": alias, "object": "model", "owned_by": "me",
                                                         "permissions": []}]})

    async def chat(request: Request) -> Response:
        body = await request.json()
        head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": alias}
        if not body.get("stream"):
            counts = {"usage": {"prompt_tokens": 5, "completion_tokens": len(words),
                                "total_tokens": 5 + len(words)}} if usage else {}
            return JSONResponse({**head, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "".join(words)}, "logprobs": None,
                 "finish_reason": "stop"}], **counts})

        def event(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return "data: " + json.dumps({**head, "choices": [choice]}) + "\r\n\r\n"   # its CRLF line ends

        async def events() -> AsyncIterator[str]:
            yield event({"role": "assistant"})
            for word in words:
                await asyncio.sleep(0.01)    # a token at a time, as a CPU engine decodes
                yield event({"content": word})
            if not cut:
                yield event({}, "stop")
            yield "data: [DONE]\r\n\r\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def count(request: Request) -> Response:
        body = await request.json()
        return JSONResponse({"count": len(body["input"].split())})

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    if tokenizer:
        routes.append(Route("/extras/tokenize/count", count, methods=["POST"]))
    app = Starlette(routes=routes)
    app.state.models = 0
    return app


def test_serve_in_front_of_an_engine_without_health_version_or_stream_usage(start_proxy: Any,
                                                                            tmp_path: Path) -> None:
    f16 = llama_like("smol-f16", ["The", " answer", " is", " 406", "."])
    q8 = llama_like("smol-q8", ["The", " answer", " is", " 391", "."])
    with serve_app(f16) as primary, serve_app(q8) as shadow:
        assert httpx.get(primary + "/health").status_code == 404
        url, app = start_proxy(primary=primary, shadow=shadow, shadow_model="smol-q8",
                               store=str(tmp_path / "s"), keep_rate=1.0)
        asked = f16.state.models
        for _ in range(3):
            ready = httpx.get(url + "/readyz")
            assert ready.status_code == 200, ready.text     # a 404 for /health: up, since it answers
        # never /v1/models: llama.cpp's takes the model lock (it would wait behind every
        # generation, and --interrupt_requests would cut the stream a user is reading)
        assert f16.state.models == asked
        client = openai.OpenAI(base_url=url + "/v1", api_key="none")
        streamed = client.chat.completions.create(model="smol-f16", messages=[{"role": "user", "content": "17*23?"}],
                                                  temperature=0, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert text == "The answer is 406."
        plain = client.chat.completions.create(model="smol-f16", messages=[{"role": "user", "content": "17*23?"}],
                                               temperature=0)
        assert plain.choices[0].message.content == "The answer is 406." and plain.usage is not None
        settled(app)
    store = Store.open(tmp_path / "s")
    try:
        pairs = list(store.pairs(store.latest_run().id))    # type: ignore[union-attr]
        sources = sorted((a.token_source, a.completion_tokens) for p in pairs for a in p.answers.values())
        # the streamed pair: 5 pieces each, counted from the stream; the plain one: usage
        assert sources == [("stream", 5), ("stream", 5), ("usage", 5), ("usage", 5)]
        streamed_pair = next(p for p in pairs if p.answers[Side.BASELINE].token_source == "stream")
        assert streamed_pair.answers[Side.BASELINE].inter_token_latency is not None
    finally:
        store.close()


def test_a_primary_url_that_is_no_openai_servers_base_is_not_ready(start_proxy: Any, tmp_path: Path,
                                                                  caplog: Any) -> None:
    """A 404 for /health alone does not make a server ready: another web server, or a base
    URL ending in /v1, answers 404 for everything. GET /v1/chat/completions tells them
    apart from a server without /health (405: the route is there, for POST)."""
    def nothing(request: Request) -> Response:
        return JSONResponse({"detail": "Not Found"}, status_code=404)

    stranger = Starlette(routes=[Route("/{path:path}", nothing)])
    f16 = llama_like("smol-f16", ["ok"])
    with serve_app(stranger) as other, serve_app(f16) as engine:
        # (caught at the proxy's own logger: the serve log configuration another test of this
        # process applied may keep its records from reaching the root logger's capture)
        logger = logging.getLogger("shadowdiff.proxy")
        logger.addHandler(caplog.handler)
        for primary in (other, engine + "/v1"):
            with caplog.at_level("WARNING", logger="shadowdiff.proxy"):
                url, _ = start_proxy(primary=primary, store=str(tmp_path / f"s{len(primary)}"))
                ready = httpx.get(url + "/readyz")
                assert ready.status_code == 503, ready.text
                assert "not an OpenAI-compatible server's base URL" in ready.json()["detail"]
                # said at start-up too, by a probe that runs beside the start (so, on a loaded
                # machine, after it; and it may run out of its 2 s first)
                wait_for(lambda: "is not answering" in caplog.text)
                assert ("not an OpenAI-compatible server's base URL" in caplog.text
                        or "did not answer" in caplog.text), caplog.text
            caplog.clear()
        logger.removeHandler(caplog.handler)
        url, _ = start_proxy(primary=engine, store=str(tmp_path / "right"))
        assert httpx.get(url + "/readyz").status_code == 200
    assert f16.state.models == 0


def test_replay_and_report_against_an_engine_without_version_or_stream_usage(tmp_path: Path) -> None:
    """A replay of two llama.cpp-shaped servers: the preflight takes their minimal
    /v1/models and missing /version, and the report has counts, speed and "version unknown"."""
    log = tmp_path / "prompts.txt"
    log.write_text("What is 17 times 23?\nName a prime.\n")
    f16 = llama_like("smol-f16", ["17", " *", " 23", " =", " 406"])
    q8 = llama_like("smol-q8", ["17", " *", " 23", " =", " 391"])
    with serve_app(f16) as baseline, serve_app(q8) as candidate:
        result = cli.shadowdiff("replay", str(log), "--baseline", baseline,
                                "--candidate", candidate, "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for side in ("baseline", "candidate"):
        stats = summary["sides"][side]
        assert stats["output_tokens"] == 10 and set(stats["token_sources"]) <= {"stream", "logprobs"}
        assert stats["errors"] == 0 and stats["tokens_per_second_p50"] and stats["ttft_p50"]
    assert summary["speedup"] is not None                       # speed from the stream alone
    assert summary["settings"]["versions"] == {"baseline": None, "candidate": None}
    assert summary["outcomes"]["divergent"] + summary["outcomes"]["near"] == 2
    html = (tmp_path / "out" / "report.html").read_text()
    assert "unknown (no /version)" in html


def test_answers_without_any_count_are_counted_by_the_servers_tokenizer(tmp_path: Path) -> None:
    """Bodies without usage and no logprobs asked: the count comes from the server's
    tokenizer route (llama.cpp's /extras/tokenize/count), said so; a server without one
    leaves the count unknown, and the replay still runs."""
    log = tmp_path / "prompts.txt"
    log.write_text("What is 17 times 23?\nName a prime.\n")
    words = ["17", " *", " 23", " =", " 406"]
    with (serve_app(llama_like("smol-f16", words, usage=False)) as baseline,
          serve_app(llama_like("smol-q8", [*words, " !"], usage=False, tokenizer=False)) as candidate):
        result = cli.shadowdiff("replay", str(log), "--baseline", baseline,
                                "--candidate", candidate, "--out", str(tmp_path / "out"), "--no-stream",
                                "--logprobs", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["sides"]["baseline"]["output_tokens"] == 10          # 5 words, twice, by the tokenizer
    assert summary["sides"]["baseline"]["token_sources"] == {"tokenizer": 2}
    assert not summary["sides"]["candidate"]["output_tokens"]
    assert summary["sides"]["candidate"]["token_sources"] == {"none": 2}
    assert "tokenizer" in (tmp_path / "out" / "report.md").read_text()


def test_a_replay_against_a_server_that_cuts_streams_says_so_once_and_compares_none(tmp_path: Path) -> None:
    log = tmp_path / "prompts.txt"
    log.write_text("".join(f"Question {i}?\n" for i in range(4)))
    with (serve_app(llama_like("smol-f16", ["The", " answer"])) as baseline,
          serve_app(llama_like("smol-q8", ["The", " answer"], cut=True)) as candidate):
        result = cli.shadowdiff("replay", str(log), "--baseline", baseline,
                                "--candidate", candidate, "--out", str(tmp_path / "out"), "--retries", "1")
    assert result.returncode == 1, result.stdout + result.stderr     # nothing could be compared
    assert result.stderr.count("the candidate cut a stream short") == 1, result.stderr
    assert "--interrupt_requests false" in result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["outcomes"]["error"] == 4 and summary["sides"]["candidate"]["errors"] == 4


def test_bench_against_an_engine_without_usage_says_its_counts_are_the_streams(tmp_path: Path) -> None:
    with (serve_app(llama_like("smol-f16", ["The", " answer", " is", " 406"])) as baseline,
          serve_app(llama_like("smol-q8", ["The", " answer", " is", " 391"])) as candidate):
        result = cli.shadowdiff("bench", "--baseline", baseline, "--candidate", candidate, "--concurrency", "1",
                                "--requests", "2", "--rounds", "1", "--max-tokens", "8", "--extra-body",
                                "repeat_penalty=1.0", "--out", str(tmp_path / "b.json"))
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "b.json").read_text())
    assert [level["token_sources"] for level in figures["levels"]] == [{"stream": 2}, {"stream": 2}]
    assert [level["output_tokens"] for level in figures["levels"]] == [8, 8]
    assert figures["extra_body"] == {"repeat_penalty": 1.0}
    assert "not the server's own" in result.stderr and "baseline and the candidate" in result.stderr
