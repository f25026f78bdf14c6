"""Teacher-forced scoring (shadowdiff.triage.scoring): the figures, and servers that cannot score.

The figures are checked against hand computation; the failure paths against small
servers on loopback that answer what real servers without the routes answer (404), or
garbage, or nothing. Scoring on the simulator is in tests/replay/test_scoring_e2e.py, on
llama.cpp in tests/engines/test_realengine_scoring.py.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shadowdiff.answers.client import Upstream
from shadowdiff.answers.records import Answer
from shadowdiff.triage.scoring import GIVE_UP_AFTER, Job, Scorer, Step, kl_estimate, measure, scorable, score_pair
from shadowdiff.vocabulary import Outcome, Side
from tests.support.servers import serve_app

CHAT = "/v1/chat/completions"
BODY = {"messages": [{"role": "user", "content": "Hi"}], "temperature": 0}


def test_kl_of_a_distribution_with_itself_is_zero_and_matches_the_exact_kl_when_all_is_listed() -> None:
    p = {"a": math.log(0.7), "b": math.log(0.2), "c": math.log(0.1)}
    q = {"a": math.log(0.5), "b": math.log(0.3), "c": math.log(0.2)}
    assert kl_estimate(p, p) == 0.0
    exact = sum(math.exp(lp) * (lp - q[t]) for t, lp in p.items())
    assert kl_estimate(p, q) == pytest.approx(exact)


def test_kl_of_top_k_lists_counts_the_rest_and_never_goes_negative() -> None:
    """A token missing from the scorer's list gets the scorer's k-th probability (at most
    what it has); the mass neither lists is one more bucket."""
    p = {"a": math.log(0.6), "b": math.log(0.3)}              # rest 0.1
    q = {"a": math.log(0.2), "c": math.log(0.5)}              # "b" not listed: at most 0.2
    expected = 0.6 * math.log(0.6 / 0.2) + 0.3 * math.log(0.3 / 0.2) + 0.1 * math.log(0.1 / 0.6)
    assert kl_estimate(p, q) == pytest.approx(expected)
    assert kl_estimate({"a": 0.0}, {"a": 0.0}) == 0.0
    assert kl_estimate({}, q) == 0.0


def test_measure_counts_agreement_first_disagreement_and_drops() -> None:
    top = {"x": -0.1}
    base = [Step(-0.1, 1, top), Step(-0.2, 1, top), Step(-0.3, 1, top), Step(-0.1, 1, top)]
    cand = [Step(-0.1, 1, top), Step(-1.5, 2, top), Step(-0.3, 1, top), Step(-4.0, 3, top)]
    m = measure(cand, base)
    assert (m["agreement"], m["tokens"], m["agreed"], m["first_disagreement"]) == (0.5, 4, 2, 1)
    assert m["mean_drop"] == pytest.approx((0 + 1.3 + 0 + 3.9) / 4)
    assert m["max_drop"] == pytest.approx(3.9)
    assert m["baseline_agreement"] == 1.0
    alone = measure(cand, None)   # no baseline reading: no drops, no KL
    assert "kl" not in alone and alone["agreement"] == 0.5


@pytest.mark.parametrize(("endpoint", "body", "answer", "why"), [
    (CHAT, BODY, Answer(Side.BASELINE, "m", error="boom"), "no answer"),
    (CHAT, BODY, Answer(Side.BASELINE, "m", "x", reasoning="think"), "reasoning"),
    (CHAT, BODY, Answer(Side.BASELINE, "m", "", tool_calls=[{"id": "1"}]), "tool calls"),
    (CHAT, BODY, Answer(Side.BASELINE, "m", ""), "empty"),
    ("/v1/completions", {"prompt": [1, 2, 3]}, Answer(Side.BASELINE, "m", "x"), "not one text"),
    (CHAT, {"prompt": "x"}, Answer(Side.BASELINE, "m", "x"), "no messages"),
])
def test_what_cannot_be_scored_says_why(endpoint: str, body: dict[str, Any], answer: Answer, why: str) -> None:
    reason = scorable(endpoint, body, answer)
    assert reason is not None and why in reason


def _app(handler: Callable[[str, dict[str, Any]], Response], seen: list[str]) -> Starlette:
    async def route(request: Request) -> Response:
        seen.append(request.url.path)
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = {}
        return handler(request.url.path, body)
    return Starlette(routes=[Route("/{path:path}", route, methods=["GET", "POST"])])


def _score(url: str, pairs: int = 1, timeout: float = 10.0, base_url: str | None = None
           ) -> list[dict[Side, dict[str, Any]]]:
    base, cand = Upstream(Side.BASELINE, base_url or url, "m"), Upstream(Side.CANDIDATE, url, "m")
    job = Job(CHAT, BODY, "Hello there.")

    async def go() -> list[dict[Side, dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=10) as client:
            scorer = Scorer(client, timeout=timeout)
            return [await scorer.score(job, base, [cand]) for _ in range(pairs)]
    return asyncio.run(go())


def test_a_server_without_the_routes_is_given_up_after_a_few_pairs_and_asked_no_more() -> None:
    """An OpenAI-compatible server that has no tokenizer route (404), as most engines
    other than vLLM: each pair says why, and after GIVE_UP_AFTER pairs it is not asked again."""
    seen: list[str] = []
    base_seen: list[str] = []
    with serve_app(_app(lambda path, body: JSONResponse({"detail": "Not Found"}, 404), seen)) as url, \
            serve_app(_app(lambda path, body: JSONResponse({"detail": "Not Found"}, 404), base_seen)) as base_url:
        results = _score(url, pairs=GIVE_UP_AFTER + 3, base_url=base_url)
    reasons = [r[Side.CANDIDATE]["unscorable"] for r in results]
    assert all("tokenize answered 404" in why for why in reasons), reasons
    assert not any("cannot score" in why for why in reasons[:GIVE_UP_AFTER])
    assert all(why.startswith("the server cannot score answers") for why in reasons[GIVE_UP_AFTER:])
    assert seen == ["/tokenize"] * GIVE_UP_AFTER   # (llama.cpp's route is not tried on a chat request)
    assert len(base_seen) == GIVE_UP_AFTER         # nor is the baseline asked to read itself once nobody else can


def test_garbage_from_the_tokenizer_or_the_logprobs_is_a_reason_not_a_crash() -> None:
    def garbage(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 3 if body.get("add_generation_prompt") else 5
            return JSONResponse({"count": n, "tokens": list(range(n))})
        if path == "/v1/completions":
            return JSONResponse({"choices": [{"prompt_logprobs": [None, {"not": "an entry"}]}]})
        return Response("<html>no</html>", 404)
    with serve_app(_app(garbage, [])) as url:
        [result] = _score(url)
    assert "prompt_logprobs for every prompt token" in result[Side.CANDIDATE]["unscorable"]

    def not_json(path: str, body: dict[str, Any]) -> Response:
        return Response(b"\x00\xff not json", 200, media_type="application/json")
    with serve_app(_app(not_json, [])) as url:
        [result] = _score(url)
    assert "not JSON" in result[Side.CANDIDATE]["unscorable"]


def test_a_refused_prompt_logprobs_says_what_the_server_said() -> None:
    """vLLM started with --max-logprobs below the top-k asked: its 400 message is the reason."""
    def refusing(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 3 if body.get("add_generation_prompt") else 5
            return JSONResponse({"count": n, "tokens": list(range(n))})
        return JSONResponse({"error": {"message": "Requested prompt logprobs of 10, which is greater than max "
                                                  "allowed: 5", "type": "BadRequestError", "code": 400}}, 400)
    with serve_app(_app(refusing, [])) as url:
        [result] = _score(url)
    why = result[Side.CANDIDATE]["unscorable"]
    assert "completions answered 400" in why and "max allowed: 5" in why


def test_a_server_that_never_answers_costs_the_timeout_not_the_run() -> None:
    async def slow(request: Request) -> Response:
        await asyncio.sleep(30)
        return Response()
    app = Starlette(routes=[Route("/{path:path}", slow, methods=["POST"])])
    with serve_app(app) as url:
        [result] = _score(url, timeout=0.3)
    assert "no scores within 0.3 s" in result[Side.CANDIDATE]["unscorable"]


def test_a_sampled_pair_or_a_failed_candidate_is_not_scored() -> None:
    async def go(body: dict[str, Any], cand: Answer) -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            answers = {Side.BASELINE: Answer(Side.BASELINE, "m", "x"), Side.CANDIDATE: cand}
            ups = [Upstream(Side.BASELINE, "http://127.0.0.1:9"), Upstream(Side.CANDIDATE, "http://127.0.0.1:9")]
            return await score_pair(Scorer(client), CHAT, body, answers, ups, Outcome.DIVERGENT)
    assert asyncio.run(go({**BODY, "temperature": 0.7}, Answer(Side.CANDIDATE, "m", "y"))) == {}
    assert asyncio.run(go(BODY, Answer(Side.CANDIDATE, "m", error="down"))) == {}
    # a seed makes sampling repeatable (the pair is compared), not greedy: nothing to read
    assert asyncio.run(go({**BODY, "temperature": 1.0, "seed": 7}, Answer(Side.CANDIDATE, "m", "y"))) == {}


def _entry(token: int) -> dict[str, Any]:
    return {str(token): {"logprob": -0.1, "rank": 1, "decoded_token": "x"}}


def test_pairs_the_engine_refuses_never_give_the_server_up() -> None:
    """vLLM answered /tokenize (so it is vLLM) but refuses this pair's prompt_logprobs: the
    pair says why, no other engine's routes are tried,
    and later pairs are still scored, however many are refused first."""
    refused = {"left": GIVE_UP_AFTER + 1}

    def picky(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 3 if body.get("add_generation_prompt") else 5
            return JSONResponse({"count": n, "tokens": list(range(n))})
        if refused["left"] > 0:
            refused["left"] -= 1
            return JSONResponse({"error": {"message": "this prompt cannot be read", "type": "BadRequestError",
                                           "code": 400}}, 400)
        return JSONResponse({"choices": [{"prompt_logprobs": [None, *(_entry(t) for t in range(1, 5))]}]})
    seen: list[str] = []
    with serve_app(_app(picky, seen)) as url:
        results = _score(url, pairs=GIVE_UP_AFTER + 3)
    reasons = [r[Side.CANDIDATE].get("unscorable") for r in results]
    assert all(why and "cannot be read" in why and "llama.cpp" not in why for why in reasons[:2]), reasons
    assert results[-1][Side.CANDIDATE]["agreement"] == 1.0 and results[-1][Side.CANDIDATE]["tokens"] == 2
    assert "/extras/tokenize" not in seen


def test_an_answer_that_filled_the_context_is_read_without_its_last_token() -> None:
    """vLLM must generate a token: an answer cut at the context length leaves no room, and
    it answers 400 ``max_tokens must be at least 1, got 0``. Read again one token short; and
    a run of such pairs, more than ``GIVE_UP_AFTER``, never makes the scorer give the server up."""
    asked: list[int] = []

    def full(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 3 if body.get("add_generation_prompt") else 6
            return JSONResponse({"count": n, "tokens": list(range(n))})
        asked.append(len(body["prompt"]))
        if len(body["prompt"]) == 6:
            return JSONResponse({"error": {"message": "max_tokens must be at least 1, got 0.", "type":
                                           "BadRequestError", "param": "max_tokens", "code": 400}}, 400)
        return JSONResponse({"choices": [{"prompt_logprobs": [None, *(_entry(t) for t in range(1, 5))]}]})
    with serve_app(_app(full, [])) as url:
        results = _score(url, pairs=GIVE_UP_AFTER + 1)
    for result in results:
        assert result[Side.CANDIDATE]["tokens"] == 2 and result[Side.CANDIDATE]["agreement"] == 1.0, result
    # the baseline's own reading too (the two at once), each read again one token short, every pair:
    # as many short reads as whole ones, and never a short read before the whole one it retries
    assert sorted(asked) == [5] * 2 * (GIVE_UP_AFTER + 1) + [6] * 2 * (GIVE_UP_AFTER + 1), asked
    assert all(asked[:i].count(5) <= asked[:i].count(6) for i in range(len(asked) + 1)), asked


@pytest.mark.parametrize(("logprob", "rank", "why"), [
    ("NaN", "1", "not a finite number"), ("-Infinity", "1", "not a finite number"),
    ("Infinity", "1", "not a finite number"), ("0.5", "1", "at most 0"),
    ('"-0.1"', "1", "not a finite number"), ("-0.1", "0.5", "not a whole number"), ("-0.1", '"1"', "whole number"),
    ("-0.1", "0", "whole number"),
    ("-0.1", str(2**64), "whole number"),   # read as a float by orjson: no rank is that far down either
])
def test_a_logprob_or_rank_that_cannot_be_is_a_reason_not_a_score(logprob: str, rank: str, why: str) -> None:
    """NaN and infinities (Python's JSON reads them) must never reach a store: PostgreSQL's
    JSON refuses NaN, and the pair would be lost; a positive logprob or a rank of 0.5 is no
    distribution either."""
    def hostile(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 3 if body.get("add_generation_prompt") else 5
            return JSONResponse({"count": n, "tokens": list(range(n))})
        entry = f'{{"3": {{"logprob": {logprob}, "rank": {rank}, "decoded_token": "x"}}}}'
        entry4 = entry.replace('"3"', '"4"')
        return Response(f'{{"choices": [{{"prompt_logprobs": [null, {entry}, {entry}, {entry}, {entry4}]}}]}}',
                        media_type="application/json")
    with serve_app(_app(hostile, [])) as url:
        [result] = _score(url)
    assert why in result[Side.CANDIDATE]["unscorable"], result


def test_vllms_minus_9999_is_read_as_the_floor() -> None:
    """vLLM sends -inf as -9999.0: a real value (the token was impossible), floored so that
    one such token cannot swamp a run's mean drop and KL."""
    def floored(path: str, body: dict[str, Any]) -> Response:
        if path == "/tokenize":
            n = 2 if body.get("add_generation_prompt") else 3
            return JSONResponse({"count": n, "tokens": list(range(n))})
        return JSONResponse({"choices": [{"prompt_logprobs": [
            None, {"1": {"logprob": -0.1, "rank": 1}},
            {"2": {"logprob": -9999.0, "rank": 7}, "5": {"logprob": -0.01, "rank": 1}}]}]})
    with serve_app(_app(floored, [])) as url:
        [result] = _score(url)
    score = result[Side.CANDIDATE]
    assert score["agreement"] == 0.0 and score["tokens"] == 1
    assert score["mean_drop"] == 0.0 and score["kl"] == 0.0   # the baseline read the same (one server)


def test_a_runs_excess_disagreement_is_read_against_the_baselines_own_reading() -> None:
    """Three prompts: the baseline reads its own answers at 98 %, the candidate at 95 %,
    the replica as the baseline: excess 3 points, none for the replica."""
    from shadowdiff.statistics.scorestats import ScoreTally, unreadable

    candidate, replica = ScoreTally(), ScoreTally()
    for tokens, own, cand in ((100, 98, 95), (200, 196, 188), (50, 49, 49)):
        score = {"tokens": tokens, "agreed": cand, "agreement": cand / tokens, "kl": 0.01, "mean_drop": 0.0,
                 "max_drop": 0.1, "baseline_agreement": own / tokens}
        noise = {**score, "agreed": own, "agreement": own / tokens, "kl": 0.0}
        candidate.add(score, noise)
        replica.add(noise)
    t, floor = candidate.as_json(), replica.as_json()
    assert t is not None and floor is not None
    excess = t["excess_disagreement"]
    assert excess["estimate"] == pytest.approx((3 + 8 + 0) / 350) and excess["pairs"] == 3
    assert excess["low"] < excess["estimate"] < excess["high"]
    assert floor["excess_disagreement"]["estimate"] == pytest.approx(0.0)
    assert t["beyond_replica"]["estimate"] == pytest.approx(excess["estimate"])
    assert t["baseline_agreement"] == pytest.approx(343 / 350) and unreadable(t) is None
    # what cannot be read: no reading of its own, or one far below a greedy reading's
    assert "did not score its own answers" in (unreadable({**t, "baseline_agreement": None}) or "")
    assert "only 85.00 %" in (unreadable({**t, "baseline_agreement": 0.85}) or "")


def test_stored_figures_that_are_not_a_score_are_counted_unscored_not_pooled() -> None:
    """A store edited by hand (or by another tool) may hold a NaN or a share above 1:
    pooled, it would print "+nan points" or 109 % and write NaN into summary.json."""
    from shadowdiff.statistics.scorestats import ScoreTally

    good = {"tokens": 100, "agreed": 95, "agreement": 0.95, "kl": 0.01, "mean_drop": 0.0, "max_drop": 0.1,
            "baseline_agreement": 0.98}
    tally = ScoreTally()
    for bad in ({**good, "baseline_agreement": 1.5}, {**good, "kl": math.nan}, {**good, "agreement": math.nan},
                {**good, "tokens": 0, "agreed": 0}, {**good, "agreed": 101}):
        tally.add(bad)
    tally.add(good)
    t = tally.as_json()
    assert t is not None and t["pairs"] == 1 and t["excess_disagreement"]["estimate"] == pytest.approx(0.03)
    assert sum(t["unscored"].values()) == 5
    json.dumps(t, allow_nan=False)   # nothing in it that is not JSON


def test_the_replica_counts_beyond_it_only_on_the_same_tokens() -> None:
    """The replica's score is of the same answer, so of as many tokens: one that is not
    (another tokenizer, a store mixed up) is left out of ``beyond_replica``."""
    from shadowdiff.statistics.scorestats import ScoreTally

    score = {"tokens": 100, "agreed": 95, "agreement": 0.95, "kl": 0.01, "mean_drop": 0.0, "max_drop": 0.1,
             "baseline_agreement": 0.98}
    tally = ScoreTally()
    tally.add(score, {**score, "tokens": 99, "agreed": 98, "agreement": 98 / 99})
    tally.add(score, {**score, "agreed": 98, "agreement": 0.98})
    t = tally.as_json()
    assert t is not None and t["beyond_replica"]["pairs"] == 1 and t["excess_disagreement"]["pairs"] == 2
    assert t["beyond_replica"]["estimate"] == pytest.approx(0.03)


def test_a_runs_agreement_and_kl_intervals_stay_within_what_they_can_be() -> None:
    """Over three prompts a normal interval reaches past 100 % agreement and below 0 nats of KL;
    each is cut where the measure ends."""
    from shadowdiff.statistics.scorestats import ScoreTally

    tally = ScoreTally()
    for agreed, kl in ((10, 0.0), (10, 0.0), (7, 0.02)):
        tally.add({"tokens": 10, "agreed": agreed, "agreement": agreed / 10, "kl": kl, "mean_drop": 0.0,
                   "max_drop": 0.0, "baseline_agreement": 1.0})
    figures = tally.as_json()
    assert figures is not None
    agreement, divergence = figures["agreement"], figures["kl"]
    assert agreement["estimate"] == pytest.approx(0.9) and agreement["high"] == 1.0 and agreement["low"] < 0.9
    assert divergence["low"] == 0.0 and divergence["high"] > divergence["estimate"] > 0
