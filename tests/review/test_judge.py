"""The optional LLM judge, against a fake OpenAI-compatible judge server on loopback."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from shadowdiff.errors import InputError
from shadowdiff.review.judge import RESPONSE_FORMAT, JudgeSettings, judge_run, parse_judgement
from shadowdiff.store import Store, schema
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.vocabulary import Decision, Side, Verdict
from tests.support import cli
from tests.support.runs import make_run, run_report
from tests.support.servers import free_port, serve_app


class FakeJudge:
    """Says 'factual, the answer with 43 is worse' and 'wording' otherwise; or misbehaves."""

    def __init__(self, mode: str = "good") -> None:
        self.mode = mode
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        if self.mode == "error":
            return JSONResponse({"error": {"message": "boom", "type": "InternalServerError", "code": 500}},
                                status_code=500)
        if self.mode == "json-mode" and body.get("response_format", {}).get("type") == "json_schema":
            # as llama-cpp-python's server: its request model knows "text" and "json_object" only (a 500)
            return JSONResponse({"error": {"message": "1 validation error: response_format.type: Input should be "
                                           "'text' or 'json_object'", "type": "InternalServerError", "code": 500}},
                                status_code=500)
        if self.mode == "hang":
            await asyncio.sleep(30)
        if self.mode == "no-schema" and "response_format" in body:   # as a server without structured outputs
            return JSONResponse({"error": {"message": "response_format json_schema is not supported",
                                           "type": "BadRequestError", "code": 400}}, status_code=400)
        if self.mode == "too-long":   # a 400 that is not about the schema: asked again in words, kept
            return JSONResponse({"error": {"message": "This model's maximum context length is 2048 tokens",
                                           "type": "BadRequestError", "code": 400}}, status_code=400)
        user = body["messages"][-1]["content"]
        a = user.split("ANSWER A:\n", 1)[1].split("\n\nANSWER B:", 1)[0]
        b = user.split("ANSWER B:\n", 1)[1]
        if self.mode == "chatty":
            content = "They look the same to me."
        elif "43" in a or "43" in b:
            letter = "A" if "43" in a else "B"
            said = {"verdict": "factual", "worse": letter, "reason": f"Answer {letter} says 43: {letter} is wrong"}
            content = f"```json\n{json.dumps(said)}\n```"
        else:
            content = json.dumps({"verdict": "wording", "worse": None, "reason": "same content"})
        answer = JSONResponse({"id": "chatcmpl-judge", "object": "chat.completion", "created": 0,
                               "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        if self.mode == "drip":    # a good answer after 5 s of spaces, a byte every 0.1 s: no read waits long
            async def drip() -> Any:
                for _ in range(50):
                    yield b" "
                    await asyncio.sleep(0.1)
                yield answer.body
            return StreamingResponse(drip(), media_type="application/json")
        return answer


@pytest.fixture
def judge_server() -> Iterator[tuple[str, FakeJudge]]:
    fake = FakeJudge()
    with serve_app(Starlette(routes=[Route("/v1/chat/completions", fake.chat, methods=["POST"])])) as url:
        yield url, fake


def run_judge(store_dir: Path, url: str, *args: str) -> cli.Ran:
    return cli.shadowdiff("judge", str(store_dir), "--judge", url,
                          "--judge-model", "judge-model", *args)


def judged(store: Store, run: str) -> dict[str, tuple[str | None, str | None]]:
    p = schema.pairs.c
    with store.engine.connect() as c:
        rows = c.execute(schema.pairs.select().where(p.run_id == run)).all()
    return {r.key: (r.judge_verdict, r.judge_wrong_side) for r in rows}


def test_the_judge_fills_suggestions_that_never_count(tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    store, run, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    assert done.returncode == 0, done.stderr
    assert "3 pairs judged" in done.stderr
    got = judged(store, run)
    assert got["flip"] == ("factual", "candidate")        # mapped from A/B back to the real side
    assert got["drift"] == ("wording", None)
    assert got["same"] == (None, None)                    # identical pairs are not asked about
    # the judge saw both orders across pairs, and the rubric question
    assert all(r["model"] == "judge-model" and r["temperature"] == 0 for r in fake.requests)
    assert "factual or numerical claim" in fake.requests[0]["messages"][0]["content"]
    # a suggestion is not a verdict: the run is incomplete, not failed
    assert acceptance(store, run).decision is Decision.INCOMPLETE
    report = run_report(tmp_path)
    assert report.returncode == 2
    line = next(t for t in report.stdout.splitlines() if "LLM judge's suggestion (not counted)" in t)
    assert "1 factual (candidate wrong)" in line and "2 wording" in line
    # asked again, nothing is re-judged without --redo
    before = len(fake.requests)
    assert run_judge(tmp_path, url).returncode == 0 and len(fake.requests) == before
    assert run_judge(tmp_path, url, "--redo").returncode == 0 and len(fake.requests) == before + 3
    store.close()


def test_report_can_run_the_judge_first(tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    url, _ = judge_server
    store, run, _ = make_run(tmp_path)
    report = run_report(tmp_path, "--judge", url, "--judge-model", "judge-model")
    assert report.returncode == 2, report.stderr
    assert judged(store, run)["label"] == ("wording", None)
    assert run_report(tmp_path, "--judge", url).returncode == 3   # a judge without a model: no report
    store.close()


@pytest.mark.parametrize("mode", ["chatty", "error", "down"])
def test_a_misbehaving_judge_stores_nothing_and_says_so(tmp_path: Path, judge_server: tuple[str, FakeJudge],
                                                        mode: str) -> None:
    url, fake = judge_server
    fake.mode = mode
    if mode == "down":
        url = f"http://127.0.0.1:{free_port()}"
    store, run, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    expected = {"chatty": "3 replies not in the asked format", "error": "3 calls failed", "down": "3 calls failed"}
    assert expected[mode] in done.stderr
    if mode == "chatty":   # the replies that could not be read are shown, each with its pair and why
        assert "replies that could not be read (3 of 3 shown; those pairs stay unjudged)" in done.stderr
        assert done.stderr.count('"They look the same to me."') == 3 and "no JSON object" in done.stderr
    else:
        assert "first problem: pair" in done.stderr
    # a judge that answered (out of format) is a judge's failing; one that never answered is a
    # configuration error (exit 3, as docs/review.md says), from judge and from report alike
    assert done.returncode == (1 if mode == "chatty" else 3), done.stderr
    if mode != "chatty":
        assert f"Error: the judge at {url} could not be used: every call failed" in done.stderr
        report = run_report(tmp_path, "--judge", url, "--judge-model", "judge-model")
        assert report.returncode == 3 and "could not be used" in report.stderr, report.stderr
        assert "Traceback" not in report.stderr
    assert all(v == (None, None) for v in judged(store, run).values())
    store.close()


def test_the_reply_is_held_to_a_json_schema(tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    store, _, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    assert done.returncode == 0 and "replies held to a JSON schema (response_format json_schema)" in done.stderr
    formats = [r.get("response_format") for r in fake.requests]
    assert len(formats) == 3 and all(f == RESPONSE_FORMAT for f in formats)
    schema_ = formats[0]["json_schema"]["schema"]
    assert schema_["properties"]["verdict"]["enum"] == ["ambiguous", "equivalent", "factual", "minor", "wording"]
    store.close()


def test_a_server_that_refuses_the_schema_is_asked_in_words(tmp_path: Path,
                                                            judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    fake.mode = "no-schema"
    store, run, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    assert done.returncode == 0, done.stderr
    assert "3 pairs judged" in done.stderr and "refused a JSON schema (response_format json_schema): HTTP 400" \
        in done.stderr and "asked in words only" in done.stderr
    assert judged(store, run)["flip"] == ("factual", "candidate")   # no pair lost to the switch
    # once refused, the rest are asked in words only: at most the requests then in flight carried it
    assert sum("response_format" not in r for r in fake.requests) == 3
    store.close()


def test_a_server_with_json_mode_only_is_held_to_the_schema_there(tmp_path: Path,
                                                                  judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    fake.mode = "json-mode"
    store, run, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    assert done.returncode == 0 and "3 pairs judged" in done.stderr, done.stderr
    assert "replies held to a JSON schema in JSON mode (response_format json_object with a schema)" in done.stderr
    assert judged(store, run)["flip"] == ("factual", "candidate")
    taken = [r["response_format"] for r in fake.requests if r["response_format"]["type"] == "json_object"]
    assert len(taken) == 3 and all(f["schema"]["required"] == ["verdict", "worse", "reason"] for f in taken)
    store.close()


def test_a_bad_request_unrelated_to_the_schema_keeps_it(tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    fake.mode = "too-long"
    store, _, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url)
    assert "3 calls failed" in done.stderr and "refused a JSON schema" not in done.stderr
    # each pair: in each form, then in words, to tell; the schema was never given up
    assert len(fake.requests) == 9 and sum("response_format" in r for r in fake.requests) == 6
    store.close()


def test_a_judge_that_hangs_costs_its_timeout_per_attempt(tmp_path: Path,
                                                          judge_server: tuple[str, FakeJudge]) -> None:
    """--judge-timeout bounds each attempt: a judge that never answers fails each call
    after its attempts (4 x 1 s and the backoff between), not after 4 x 120 s. (At 0.3 s, on a
    loaded machine, an attempt could end before the server had read its request: 11 of 12 seen.)"""
    url, fake = judge_server
    fake.mode = "hang"
    store, _, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url, "--judge-timeout", "1", "--judge-concurrency", "3")
    assert done.returncode == 3 and "3 calls failed" in done.stderr, done.stderr
    assert len(fake.requests) == 12   # each of the 3 pairs: 4 attempts, in the first form
    assert run_judge(tmp_path, url, "--judge-timeout", "0").returncode == 2   # click's usage error
    store.close()


def test_a_judge_that_drips_its_answer_costs_its_timeout_per_attempt_too(
        tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    url, fake = judge_server
    fake.mode = "drip"
    store, _, _ = make_run(tmp_path)
    done = run_judge(tmp_path, url, "--judge-timeout", "1", "--judge-concurrency", "3")
    assert done.returncode == 3 and "3 calls failed" in done.stderr, done.stderr
    assert len(fake.requests) == 12   # each attempt cut at 1 s whole, not answered after the 5 s its body takes
    store.close()


def test_bad_judge_options(tmp_path: Path) -> None:
    make_run(tmp_path)[0].close()
    bad = run_judge(tmp_path, "ftp://judge")
    assert bad.returncode == 3 and "must be an http(s) URL" in bad.stderr
    no_model = run_report(tmp_path, "--judge", "http://127.0.0.1:9")
    assert no_model.returncode == 3 and "--judge needs --judge-model" in no_model.stderr, no_model.stderr
    missing = cli.shadowdiff("judge", str(tmp_path / "nope"), "--judge", "http://x", "--judge-model", "m")
    assert missing.returncode == 3 and "no store at" in missing.stderr


@pytest.mark.parametrize(("reply", "baseline_first", "expected"), [
    ('{"verdict": "factual", "worse": "A", "reason": "r"}', True, (Verdict.FACTUAL, Side.BASELINE)),
    ('{"verdict": "factual", "worse": "A", "reason": "r"}', False, (Verdict.FACTUAL, Side.CANDIDATE)),
    ('{"verdict": "minor", "worse": "B", "reason": "r"}', True, (Verdict.MINOR, Side.CANDIDATE)),
    ('{"verdict": "minor", "worse": "b", "reason": "r"}', False, (Verdict.IMPROVEMENT, Side.BASELINE)),
    ('Sure! {"verdict": "equivalent", "worse": null, "reason": "r"} Hope this helps', True,
     (Verdict.EQUIVALENT, None)),
    ('<think>{maybe {"verdict": "minor"}?}</think>\n```json\n{"verdict": "Wording", "reason": "r"}\n```', True,
     (Verdict.WORDING, None)),
])
def test_replies_map_back_to_the_real_sides(reply: str, baseline_first: bool,
                                            expected: tuple[Verdict, Side | None]) -> None:
    judgement = parse_judgement(reply, baseline_first)
    assert (judgement.verdict, judgement.worse_side) == expected


def test_the_reason_is_kept_in_the_judges_letters() -> None:
    """The judge's letters are the review page's (same order): rewriting "Answer B" to a
    side name, as before, left "B is worse" in letters and mixed the two."""
    reply = '{"verdict": "factual", "worse": "B", "reason": "Answer B says 43; A is right. B is wrong."}'
    assert parse_judgement(reply, False).reason == "Answer B says 43; A is right. B is wrong."


@pytest.mark.parametrize(("reply", "message"), [
    ("no json here", "no JSON object"),
    ('{"verdict": "factual", "reason": "r"}', "which answer is worse"),
    ('{"verdict": "improvement"}', "not one of"),
    ('{"verdict": "wording",}', "does not parse"),
    ('{"verdict": ["factual"]}', "not one of"),
    ('{"verdict": "factual", "worse": ["A"]}', "which answer is worse"),
])
def test_replies_out_of_format_are_refused(reply: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        parse_judgement(reply, True)


def test_the_judge_sees_the_review_pages_order(tmp_path: Path, judge_server: tuple[str, FakeJudge]) -> None:
    """The judge's A is the review page's A on every pair (both come from the store's
    secret, not from the pair's key that the page shows), so its reason in letters and
    its worse side read the same on the page; and the order varies across pairs."""
    from shadowdiff.review.blind import Blinding
    from shadowdiff.store.review import Filters, ReviewQueue
    from tests.support.factories import pair

    url, fake = judge_server
    store = Store.open(tmp_path / "store")
    try:
        run = store.create_run("replay", {})
        store.add_pairs(run, [pair(f"k{i}", f"Pair {i}: the total is 42.", f"Pair {i}: the total is 43.")
                              for i in range(16)])
        tally = asyncio.run(judge_run(store, run, JudgeSettings(url, "judge-model")))
        assert tally.judged == {"factual": 16}
        blinding = Blinding(store.secret("blind_key"))
        queue = ReviewQueue(store)
        for row in queue.page(Filters(run_id=run)):
            stored = queue.pair(row["id"])
            assert stored is not None and stored["judge_wrong_side"] == "candidate"
            letter = blinding.letter(Side.CANDIDATE, row["id"])
            assert stored["judge_reason"] == f"Answer {letter} says 43: {letter} is wrong"
        orders = {"43" in r["messages"][-1]["content"].split("ANSWER B:")[1] for r in fake.requests}
        assert orders == {True, False}
    finally:
        store.close()


def test_the_judge_sees_the_whole_answer(tmp_path: Path) -> None:
    """A changed tool argument or a change in the thinking is in what the judge reads, not
    two identical empty texts."""
    from shadowdiff.answers.compare import compare_answers
    from shadowdiff.answers.records import Answer, Choice, Pair
    from shadowdiff.review.judge import messages

    def answer(side: Side, unit: str, product: str) -> Answer:
        call = {"id": "x", "type": "function",
                "function": {"name": "get_weather", "arguments": f'{{"unit": "{unit}"}}'}}
        return Answer(side, "m", "", "tool_calls", reasoning=f"17 * 23 = {product}", tool_calls=[call],
                      others=(Choice(1, f"It is {product}."),))

    base, cand = answer(Side.BASELINE, "celsius", "391"), answer(Side.CANDIDATE, "fahrenheit", "381")
    store = Store.open(tmp_path / "store")
    try:
        run = store.create_run("replay", {})
        store.add_pair(run, Pair("k", 1, "/v1/chat/completions", "Weather?", {}, compare_answers(base, cand),
                                 {Side.BASELINE: base, Side.CANDIDATE: cand}))
        [pair] = store.pairs(run)
        user = messages(pair, True, 10_000)[1]["content"]
    finally:
        store.close()
    for part in ("celsius", "fahrenheit", "= 391", "= 381", "It is 391.", "It is 381."):
        assert part in user
