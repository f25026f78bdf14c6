"""What the replay client records of an HTTP error: enough to act on, nothing secret."""

from __future__ import annotations

import asyncio

from shadowdiff.answers import arrivals
from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.answers.records import Answer
from shadowdiff.vocabulary import Side
from tests.support.servers import Answering, Reply, json_reply, serve_app


def call(upstream: Upstream, body: dict[str, object], attempts: int = 1) -> Answer:
    async def ask() -> Answer:
        async with arrivals.answers_session(2, 10) as session:
            return await Caller(session, RetryPolicy(attempts=attempts, backoff=0.0)).call(
                upstream, "/v1/chat/completions", body)
    return asyncio.run(ask())


def test_a_404_names_the_url_called_without_credentials_or_query() -> None:
    with serve_app(Answering(lambda path, body: json_reply(404, {"detail": "Not Found"}))) as url:
        where = url.removeprefix("http://")
        upstream = Upstream(Side.CANDIDATE, f"http://user:secret@{where}/v1/chat/completions", "m")
        error = call(upstream, {"messages": [], "stream": False}).error
    assert error is not None
    assert error.startswith(f"HTTP 404 from http://{where}/v1/chat/completions/v1/chat/completions (give each "
                            "side's base URL"), error
    assert "secret" not in error and "user" not in error


def test_a_404_for_a_model_the_server_does_not_serve_gets_no_base_url_hint() -> None:
    """vLLM's answer to a wrong model name (a judge's, say): the URL is right."""
    body = {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": "model",
                      "code": 404}}
    with serve_app(Answering(lambda path, _: json_reply(404, body))) as url:
        error = call(Upstream(Side.CANDIDATE, url, "nope"), {"messages": [], "stream": False}).error
    assert error is not None and error.startswith("HTTP 404: ") and "does not exist" in error
    assert "base URL" not in error


def test_an_error_body_is_kept_bounded_and_a_busy_server_is_retried_after_what_it_asked() -> None:
    """A 503 is asked again (its Retry-After honoured); an error that stays keeps the start of
    its body, however long the body is (a stack trace, an HTML page)."""
    huge = "é" * 1_000_000
    replies: list[Reply] = [json_reply(503, {"detail": "busy"}, ((b"retry-after", b"0"),)),
                            (500, [(b"content-type", b"text/plain; charset=utf-8")], huge.encode())]
    app = Answering(lambda path, body: replies.pop(0))
    with serve_app(app) as url:
        answer = call(Upstream(Side.BASELINE, url, "m"), {"messages": [], "stream": True}, attempts=3)
    assert answer.attempts == 2 and answer.status == 500 and len(app.seen) == 2
    assert answer.error == "HTTP 500: " + "é" * 2000


def test_the_credentials_in_a_url_are_sent_as_basic_unless_there_is_an_api_key() -> None:
    """One Authorization per request, chosen as ``serve`` chooses an upstream's: the API
    key, else the URL's user and password, else the Authorization given; the URL goes
    without them."""
    answer = {"choices": [{"index": 0, "message": {"content": "Hi."}, "finish_reason": "stop"}],
              "usage": {"completion_tokens": 2}}
    app = Answering(lambda path, body: json_reply(200, answer))
    with serve_app(app) as url:
        with_userinfo = url.replace("http://", "http://us%40er:pa:ss@")
        for upstream in (Upstream(Side.BASELINE, with_userinfo, "m"), Upstream(Side.BASELINE, with_userinfo, "m", "k1"),
                         Upstream(Side.BASELINE, url, "m", authorization="Custom x")):
            assert call(upstream, {"messages": [], "stream": False}).text == "Hi."
    # base64 of "us@er:pa:ss"
    assert [headers.get(b"authorization") for _, headers in app.seen] == [b"Basic dXNAZXI6cGE6c3M=", b"Bearer k1",
                                                                          b"Custom x"]


def test_a_stream_cut_short_with_done_is_retried_and_then_an_error() -> None:
    """llama.cpp's server ends a stream with [DONE] but no finish chunk when another request
    arrives: not an answer. Retried like a dropped stream; an error when it keeps happening."""
    def frames(*chunks: str) -> bytes:
        return b"".join(b'data: {"choices": [{"index": 0, "delta": %s}]}\n\n' % c.encode() for c in chunks)

    cut = frames('{"role": "assistant"}', '{"content": "The answer"}') + b"data: [DONE]\n\n"
    whole = (frames('{"role": "assistant"}', '{"content": "The answer is 391."}')
             + b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')

    def ask(bodies: list[bytes], attempts: int) -> tuple[str | None, str, int]:
        app = Answering(lambda path, body: (200, [(b"content-type", b"text/event-stream")], bodies.pop(0)))
        with serve_app(app) as url:
            answer = call(Upstream(Side.CANDIDATE, url, "m"), {"messages": [], "stream": True}, attempts)
        return answer.error, answer.text, answer.attempts

    assert ask([cut, whole], 2) == (None, "The answer is 391.", 2)
    error, text, attempts = ask([cut], 1)
    assert error is not None and "without a finish reason" in error and attempts == 1
    assert text == ""   # the prefix is not kept as if it were the answer
