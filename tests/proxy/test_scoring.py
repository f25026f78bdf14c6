"""Teacher-forced scoring in the proxy (``--score-rate``, proxy/scoring.py): scores in the
store and at /metrics, nothing asked of the upstreams when off, the rate, a shadow that
cannot score, and the client's bytes untouched.

The simulator's prompt_logprobs are not yet the drift model's (agreement values are
arbitrary), so these tests look at which pairs carry scores and how they are counted,
never at the figures themselves.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

from shadowdiff.errors import ConfigError
from shadowdiff.proxy.cli import serve, settings_from_options
from shadowdiff.proxy.scoring import SCORE_BURST, TokenBucket, burst_of, client_authorization
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import Store
from shadowdiff.triage.scoring import GIVE_UP_AFTER
from tests.support.fixtures import MODEL
from tests.support.proxying import FP8, scrape, settled, value, wait_for
from tests.support.servers import HTTP, Recorder, read_body, serve_app

Start = Callable[..., Any]
SCORING_PATHS = ("/tokenize", "/extras/tokenize", "/v1/completions")


class NoTokenizer:
    """An upstream without a tokenizer route: /tokenize answers 404, as a server without it does."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in ("/tokenize", "/extras/tokenize"):
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"detail":"Not Found"}'})
            return
        await self.app(scope, receive, send)


class Credentials:
    """An upstream that notes the Authorization each POST came with, by path (the proxy's
    own /health probe goes without)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            given = next((v.decode() for k, v in scope["headers"] if k == b"authorization"), None)
            self.seen.append((scope["path"], given))
        await self.app(scope, receive, send)


class HangingTokenizer:
    """An upstream whose /tokenize never answers (it waits until the caller goes away)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/tokenize":
            await read_body(receive)
            await receive()      # the disconnect
            return
        await self.app(scope, receive, send)


class AgreesWithEverything:
    """An upstream that reads every prompt token as its own first choice (prompt_logprobs
    all rank 1): a candidate whose answers changed only by a cascade from a near-tie."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/completions":
            await self.app(scope, receive, send)
            return
        request = json.loads(await read_body(receive))
        if "prompt_logprobs" not in request:
            await self.app(scope, _replayed(request, receive), send)
            return
        messages: list[dict[str, Any]] = []

        async def keep(message: dict[str, Any]) -> None:
            messages.append(message)

        await self.app(scope, _replayed(request, receive), keep)
        body = json.loads(b"".join(m.get("body", b"") for m in messages[1:]))
        ids = request["prompt"]
        body["choices"][0]["prompt_logprobs"] = [None] + [{str(t): {"logprob": -0.01, "rank": 1}} for t in ids[1:]]
        raw = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": messages[0]["status"], "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
        await send({"type": "http.response.body", "body": raw})


def _replayed(request: dict[str, Any], receive: Any) -> Callable[[], Any]:
    """The request's body once, then what the connection says (its disconnect, when it comes)."""
    given = False

    async def receiving() -> dict[str, Any]:
        nonlocal given
        if given:
            return dict(await receive())
        given = True
        return {"type": "http.request", "body": json.dumps(request).encode(), "more_body": False}
    return receiving


@pytest.fixture
def start_recorded() -> Iterator[Callable[..., tuple[str, Recorder]]]:
    """Simulators whose every POST is recorded (path and body); ``wrap`` goes inside the recorder."""
    stack: list[Any] = []

    def start(wrap: Callable[[Any], Any] = lambda app: app, **settings: Any) -> tuple[str, Recorder]:
        settings.setdefault("served_model_names", (MODEL,))
        recorder = Recorder(wrap(build_app(SimulatorSettings(**settings))))
        context = serve_app(recorder)
        stack.append(context)
        return context.__enter__(), recorder

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="client-key-for-scoring", max_retries=0)


def _ask(url: str, prompts: list[str], concurrency: int = 1, **extra: Any) -> list[str]:
    client = _client(url)

    def one(prompt: str) -> str:
        answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}],
                                                max_tokens=64, **{"temperature": 0, **extra})
        return answer.choices[0].message.content or ""

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, prompts))


def _stored(store: Path) -> list[Any]:
    opened = Store.open(store)
    try:
        run = opened.latest_run("serve")
        assert run is not None
        return list(opened.pairs(run.id))
    finally:
        opened.close()


def _scoring_requests(recorder: Recorder) -> list[tuple[str, dict[str, Any]]]:
    return [(path, body) for path, body in recorder.seen
            if path in SCORING_PATHS or "prompt_logprobs" in body or body.get("echo")]


def _prompts(n: int) -> list[str]:
    return [f"Question {i}: explain {t} for a newcomer." for i, t in enumerate(["rivers", "taxes", "gardens"] * n)][:n]


def test_scored_pairs_carry_their_scores_and_the_histogram_counts_them(
        start_recorded: Start, start_proxy: Start, tmp_path: Path) -> None:
    (baseline, base_seen), (candidate, cand_seen), (replica, replica_seen) = (
        start_recorded(), start_recorded(served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy")),
        start_recorded(seed=7))
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, replica=replica, replica_rate=1.0,
                           score_rate=1000.0, keep_rate=1.0, store=str(tmp_path / "s"))
    n = 9
    _ask(url, _prompts(n))
    _ask(url, ["a sampled one"], temperature=0.7)     # not greedy: never scored
    settled(app)
    _, families = scrape(url)
    assert value(families, "shadowdiff_scores", result="scored") == n
    assert value(families, "shadowdiff_scores", result="unscorable") == 0
    assert value(families, "shadowdiff_scores", result="rate_limited") == 0
    for side in ("candidate", "replica"):
        assert value(families, "shadowdiff_token_agreement", "shadowdiff_token_agreement_count", side=side) == n
        assert value(families, "shadowdiff_token_agreement", "shadowdiff_token_agreement_bucket", side=side,
                     le="+Inf") == n
    # every side was asked with the ids of the prompt and the answer (vLLM's route), and the client's key
    for seen in (base_seen, cand_seen, replica_seen):
        asked = _scoring_requests(seen)
        assert {path for path, _ in asked} == {"/tokenize", "/v1/completions"}
        assert sum(1 for _, body in asked if "prompt_logprobs" in body) == n

    app.writer.close()
    pairs = _stored(tmp_path / "s")
    assert len(pairs) == n + 1
    cascades = 0
    for pair in pairs:
        if not pair["comparable"]:
            assert pair["score"] is None and pair["noise_score"] is None
            continue
        score, noise = pair["score"], pair["noise_score"]
        assert 0.0 <= score["agreement"] <= 1.0 and score["tokens"] > 0 and score["engine"] == "vllm"
        assert 0.0 <= noise["agreement"] <= 1.0 and "cascade" not in noise
        assert pair["token_agreement"] == score["agreement"]
        # a cascade is a signal (and counted with the others) exactly when the score says so
        kinds = {s["kind"] for s in pair["signals"] or []}
        assert ("cascade" in kinds) == score.get("cascade", False)
        cascades += "cascade" in kinds
    assert value(families, "shadowdiff_pair_signals", kind="cascade") == cascades


def test_off_by_default_nothing_is_scored_nor_asked(start_recorded: Start, start_proxy: Start,
                                                    tmp_path: Path) -> None:
    (baseline, base_seen), (candidate, cand_seen), (replica, replica_seen) = (
        start_recorded(), start_recorded(served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy")),
        start_recorded(seed=7))
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, replica=replica, replica_rate=1.0,
                           keep_rate=1.0, store=str(tmp_path / "s"))
    n = 6
    _ask(url, _prompts(n))
    settled(app)
    assert app.pairs.scorer is None and app.score_client is None
    for seen in (base_seen, cand_seen, replica_seen):
        assert len(seen.seen) == n and not _scoring_requests(seen)
    _, families = scrape(url)
    for result in ("scored", "unscorable", "rate_limited"):
        assert value(families, "shadowdiff_scores", result=result) == 0
    assert value(families, "shadowdiff_token_agreement", "shadowdiff_token_agreement_count") == 0
    app.writer.close()
    pairs = _stored(tmp_path / "s")
    assert len(pairs) == n and all(p["score"] is None and p["noise_score"] is None for p in pairs)


def test_a_tiny_rate_leaves_most_of_a_burst_unscored(start_recorded: Start, start_proxy: Start,
                                                      tmp_path: Path) -> None:
    (baseline, base_seen), (candidate, _) = (
        start_recorded(), start_recorded(served_model_names=(FP8,), profile=profiles.builtin("fp8")))
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, score_rate=0.001, keep_rate=1.0,
                           store=str(tmp_path / "s"))
    n = 12
    _ask(url, _prompts(n), concurrency=6)
    settled(app)
    _, families = scrape(url)
    scored = value(families, "shadowdiff_scores", result="scored")
    limited = value(families, "shadowdiff_scores", result="rate_limited")
    assert scored + limited == n and value(families, "shadowdiff_scores", result="unscorable") == 0
    assert 1 <= scored <= 2 and limited >= n - 2       # a burst of one; one more per 1,000 s
    assert sum(1 for _, body in base_seen.seen if "prompt_logprobs" in body) == scored
    app.writer.close()
    assert sum(1 for p in _stored(tmp_path / "s") if p["score"] is not None) == scored


def test_a_shadow_that_cannot_score_changes_nothing_else(start_recorded: Start, start_proxy: Start,
                                                         tmp_path: Path) -> None:
    """The shadow has no /tokenize: every pair is unscorable, the shadow is asked only until
    the scorer gives up on it, and the clients' answers and the stored pairs are those of a
    proxy that does not score."""
    (baseline, _), (candidate, cand_seen) = (
        start_recorded(), start_recorded(NoTokenizer, served_model_names=(FP8,), profile=profiles.builtin("fp8")))
    off, off_app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, keep_rate=1.0,
                               store=str(tmp_path / "off"))
    on, on_app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, keep_rate=1.0,
                             score_rate=1000.0, store=str(tmp_path / "on"))
    prompts = _prompts(8)
    assert _ask(on, prompts) == _ask(off, prompts)
    settled(on_app)
    settled(off_app)
    _, families = scrape(on)
    assert value(families, "shadowdiff_scores", result="unscorable") == len(prompts)
    assert value(families, "shadowdiff_scores", result="scored") == 0
    assert value(families, "shadowdiff_token_agreement", "shadowdiff_token_agreement_count", side="candidate") == 0
    assert sum(1 for path, _ in cand_seen.seen if path == "/tokenize") == GIVE_UP_AFTER
    for app in (on_app, off_app):
        app.writer.close()
    scored = {p["prompt"]: p for p in _stored(tmp_path / "on")}
    plain = {p["prompt"]: p for p in _stored(tmp_path / "off")}
    assert set(scored) == set(plain) and len(plain) == len(prompts)
    for prompt, pair in scored.items():
        assert "unscorable" in pair["score"] and pair["token_agreement"] is None
        for column in ("outcome", "similarity", "signals", "suggested", "priority"):
            assert pair[column] == plain[prompt][column], column
        assert {s: a.text for s, a in pair.answers.items()} == {s: a.text for s, a in plain[prompt].answers.items()}


def test_a_cascade_is_a_signal_that_keeps_the_priority_and_is_counted(start_recorded: Start, start_proxy: Start,
                                                                       tmp_path: Path) -> None:
    """A candidate that agrees with every baseline token: each pair that changed is a
    cascade, with the priority it would have had unscored."""
    (baseline, _), (candidate, _) = (start_recorded(), start_recorded(
        AgreesWithEverything, served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy")))
    off, off_app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, store=str(tmp_path / "off"))
    on, on_app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, score_rate=1000.0,
                             store=str(tmp_path / "on"))
    prompts = _prompts(12)
    _ask(on, prompts)
    _ask(off, prompts)
    settled(on_app)
    settled(off_app)
    for app in (on_app, off_app):
        app.writer.close()
    plain = {p["prompt"]: p for p in _stored(tmp_path / "off")}
    changed = [p for p in _stored(tmp_path / "on") if p["outcome"] in ("near", "divergent")]
    assert changed
    for pair in changed:
        assert pair["score"]["agreement"] == 1.0 and pair["score"]["cascade"] is True
        assert [s["kind"] for s in pair["signals"]] == [s["kind"] for s in plain[pair["prompt"]]["signals"]] + [
            "cascade"]
        # the same priority: the score is one side's reading, and the priority orders the blind queue
        assert pair["priority"] == plain[pair["prompt"]]["priority"]
    _, families = scrape(on)
    assert value(families, "shadowdiff_pair_signals", kind="cascade") == len(changed)
    assert value(scrape(off)[1], "shadowdiff_pair_signals", kind="cascade") == 0


def test_each_server_is_asked_with_the_credentials_the_proxy_forwards_it(start_recorded: Start,
                                                                         start_proxy: Start) -> None:
    """The primary with the client's own key, the shadow with --shadow-api-key, the replica
    with --replica-api-key: the same as their answers are asked with."""
    noted: list[Credentials] = []

    def noting(app: Any) -> Credentials:
        noted.append(Credentials(app))
        return noted[-1]

    baseline, candidate, replica = (start_recorded(noting)[0], start_recorded(noting, served_model_names=(FP8,))[0],
                                    start_recorded(noting, seed=7)[0])
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, shadow_api_key="shadow-key-1234",
                           replica=replica, replica_rate=1.0, replica_api_key="replica-key-1234", score_rate=1000.0)
    _ask(url, _prompts(2))
    settled(app)
    assert app.metrics.scores.labels("scored")._value.get() == 2
    for server, key in zip(noted, ("client-key-for-scoring", "shadow-key-1234", "replica-key-1234"), strict=True):
        paths = {path for path, _ in server.seen}
        assert {"/v1/chat/completions", "/tokenize", "/v1/completions"} <= paths
        assert {given for _, given in server.seen} == {f"Bearer {key}"}


def test_a_servers_url_credentials_come_before_the_clients_for_its_scoring_too(start_recorded: Start,
                                                                                start_proxy: Start) -> None:
    """The rule the answers are asked by: the URL's user and password (Basic) over the
    client's Authorization, which goes where neither an API key nor a URL names one."""
    noted: list[Credentials] = []

    def noting(app: Any) -> Credentials:
        noted.append(Credentials(app))
        return noted[-1]

    baseline, candidate = start_recorded(noting)[0], start_recorded(noting, served_model_names=(FP8,))[0]
    url, app = start_proxy(primary=baseline.replace("http://", "http://pu:ppw@"), shadow=candidate,
                           shadow_model=FP8, score_rate=1000.0)
    _ask(url, _prompts(2))
    settled(app)
    assert app.metrics.scores.labels("scored")._value.get() == 2
    basic = "Basic " + base64.b64encode(b"pu:ppw").decode()
    for server, given in zip(noted, (basic, "Bearer client-key-for-scoring"), strict=True):
        assert {"/v1/chat/completions", "/tokenize", "/v1/completions"} <= {path for path, _ in server.seen}
        assert {authorization for _, authorization in server.seen} == {given}


def test_a_shadow_whose_tokenizer_hangs_costs_the_timeout_and_the_pair_is_kept(
        start_recorded: Start, start_proxy: Start, tmp_path: Path) -> None:
    (baseline, _), (candidate, _) = (
        start_recorded(), start_recorded(HangingTokenizer, served_model_names=(FP8,), profile=profiles.builtin("fp8")))
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, score_rate=1000.0, keep_rate=1.0,
                           shadow_timeout=0.3, store=str(tmp_path / "s"))
    prompts = _prompts(2)
    _ask(url, prompts)
    settled(app)
    assert app.metrics.scores.labels("unscorable")._value.get() == len(prompts)
    app.writer.close()
    pairs = _stored(tmp_path / "s")
    assert len(pairs) == len(prompts)
    # each reading's bound (0.3 s), or the pair's (0.6 s) for one that waited behind the
    # first pair's probe of the server: which, depends on the machine's load
    assert all(re.search(r"no scores within 0\.[36] s", p["score"]["unscorable"]) for p in pairs), pairs


def test_pairs_being_scored_at_shutdown_are_stored_without_their_scores(start_recorded: Start,
                                                                        tmp_path: Path) -> None:
    """Shutdown does not wait for scoring (bounded at 30 s here, longer than the drain): the
    pairs under way are stored at once, unscored, rather than cut and lost at the deadline."""
    from shadowdiff.proxy.app import build_app as build_proxy
    from shadowdiff.proxy.httpprotocol import TargetKeepingProtocol

    (baseline, _), (candidate, cand_seen) = (
        start_recorded(), start_recorded(HangingTokenizer, served_model_names=(FP8,), profile=profiles.builtin("fp8")))
    settings = ProxySettings(primary=baseline, shadow=candidate, shadow_model=FP8, score_rate=1000.0, keep_rate=1.0,
                             drain_timeout=5.0, store=str(tmp_path / "s"))
    app = build_proxy(settings)
    with serve_app(app, lifespan="on", http=TargetKeepingProtocol) as url:
        prompts = _prompts(3)
        _ask(url, prompts)
        wait_for(lambda: sum(1 for path, _ in cand_seen.seen if path == "/tokenize") == 1)  # the first is probing
    assert app.pairs.scorer is not None and not app.pairs.pending
    pairs = _stored(tmp_path / "s")
    assert len(pairs) == len(prompts)
    assert all(p["score"] == {"unscorable": "the proxy stopped before the pair was scored"} for p in pairs)
    assert app.metrics.scores.labels("unscorable")._value.get() == len(prompts)


def test_the_client_gets_the_same_bytes_with_scoring_on_and_off(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    off, _ = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8)
    on, on_app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, score_rate=1000.0)
    created = re.compile(rb'"created":\d+')
    for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "Explain rivers."}],
                                                  "stream": True}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Explain taxes."}]}),
                       ("/v1/completions", {"prompt": "Gardens are", "stream": True})):
        body = {**body, "model": MODEL, "temperature": 0, "max_tokens": 64}
        headers = {"X-Request-Id": "same", "Authorization": "Bearer client-key-for-scoring"}
        with_scoring = HTTP.post(on + path, json=body, headers=headers)
        without = HTTP.post(off + path, json=body, headers=headers)
        assert with_scoring.status_code == without.status_code == 200
        assert created.sub(b"", with_scoring.content) == created.sub(b"", without.content)
        assert with_scoring.headers["content-type"] == without.headers["content-type"]
    settled(on_app)
    # (the proof that scoring ran beside: these pairs were scored)
    assert on_app.metrics.scores.labels("scored")._value.get() == 3


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 3.0, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] = 0.4                 # 0.8 of a pair earned: not yet
    assert not bucket.take()
    now[0] = 0.5
    assert bucket.take() and not bucket.take()
    now[0] = 100.0               # a long quiet spell earns the burst, no more
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]


def test_the_burst_is_a_seconds_worth_at_least_one_pair_and_small() -> None:
    assert [burst_of(rate) for rate in (0.001, 1.0, 3.0, 1000.0)] == [1.0, 1.0, 3.0, SCORE_BURST]


@pytest.mark.parametrize(("headers", "value"), [
    ([(b"authorization", b"Bearer sk-abc")], "Bearer sk-abc"),
    ([(b"Authorization", b" Basic dXNlcjpwYXNz ")], "Basic dXNlcjpwYXNz"),
    ([(b"authorization", b"")], None),
    ([(b"x-api-key", b"sk-abc")], None),
])
def test_the_clients_own_authorization_is_passed_whatever_its_scheme(headers: list[tuple[bytes, bytes]],
                                                                    value: str | None) -> None:
    assert client_authorization(headers) == value


@pytest.mark.parametrize("rate", [-1.0, math.nan, math.inf])
def test_a_rate_that_is_not_a_finite_number_of_pairs_is_refused(rate: float) -> None:
    with pytest.raises(ConfigError, match="--score-rate"):
        ProxySettings(primary="http://a:1", shadow="http://b:1", score_rate=rate)


def test_the_flag_and_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, Any] = {"capture": None, "capture_rate": 1.0, "capture_max_bytes": 1 << 20, "capture_keep": 5,
                               "redact": (), "label": (), "exclude_model": (), "primary_side": "baseline",
                               "primary": "http://a:1"}
    assert settings_from_options(**options).score_rate == 0.0
    assert settings_from_options(**options, score_rate=2.5).score_rate == 2.5
    monkeypatch.setenv("SHADOWDIFF_SCORE_RATE", "-1")
    refused = CliRunner().invoke(serve, ["--primary", "http://a:1", "--shadow", "http://b:1"])
    assert refused.exit_code == 2 and "--score-rate" in refused.output
