"""Redaction: a corpus of secret shapes the defaults must catch, and ordinary text they
must leave alone; answers, pairs, tokens, keys, error texts and log records."""

from __future__ import annotations

import logging
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowdiff.answers.compare import Comparison
from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.answers.redact import (
    CLEAN_TEXTS,
    DEFAULT_PATTERNS,
    MARK,
    LogRedaction,
    Redactor,
    body_secrets,
    failure_text,
    header_secrets,
    without_queries,
)
from shadowdiff.vocabulary import Outcome, Side

R = Redactor(DEFAULT_PATTERNS)

# Each secret, alone in a sentence, must be gone (and nothing else of it left behind).
SECRETS = [
    "Bearer abcdefgh1234",
    "bearer abcdefgh1234",
    "BEARER ya29.a0AfH6SMBx",
    "Basic dXNlcjpwYXNz",                 # user:pass, no digit: caught by its inner capitals
    "basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "eyJhbGciOiJub25lIn0.eyJ1c2VyIjoiYm9iIn0.",                          # alg none: no signature
    "sk-abcdefgh",                        # short: 8 after the prefix
    "sk-proj-Ab12Cd34Ef56Gh78Ij90",
    "sk-ant-api03-abcdEFGH1234",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "pk_test_TYooMQauvdEDq54NiTphI7jx",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "xoxb-123456789012-abcdefABCDEF",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAY34FZKBOKMUTVV7A",
    "jane.doe+work@example.co.uk",
    "key-3f9a8b7c6d5e4f3a2b1c",
    "glpat-AbCdEf1234567890xyzW",
    "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nProc-Type: 4,ENCRYPTED\nabc+/==\n"
    "-----END RSA PRIVATE KEY-----",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_each_default_pattern_catches_its_shapes(secret: str) -> None:
    text = f"before {secret} after"
    assert R.text(text) == f"before {MARK} after"
    # inside JSON, as a value and as a key, and inside a string that is JSON (tool-call arguments)
    assert R.value({"note": text}) == {"note": f"before {MARK} after"}
    assert R.value({secret: 1, "x": [{secret: secret}]}) == {MARK: 1, "x": [{MARK: MARK}]}
    assert secret not in R.text(f'{{"arg": "{secret}"}}')


@pytest.mark.parametrize(("text", "kept"), [
    ('api_key=zq8w7e6r&model=x', "api_key=[REDACTED]&model=x"),
    ("GET /v1/chat?api-key=correcthorse HTTP/1.1", "GET /v1/chat?api-key=[REDACTED] HTTP/1.1"),
    ('{"password": "hunter22", "n": 1}', '{"password": "[REDACTED]", "n": 1}'),
    ("Client_Secret: s3cr3t-value", "Client_Secret: [REDACTED]"),
    ("https://admin:pw123@db.internal:5432/x", "https://[REDACTED]:5432/x"),   # (the host looks like an e-mail's)
    ("postgresql://admin:pw123@db/x", "postgresql://[REDACTED]@db/x"),
    ("DB_PASSWORD=hunter22 ./run", "DB_PASSWORD=[REDACTED] ./run"),     # after an underscore
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=[REDACTED]"),
    ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY: [REDACTED]"),
    ("DefaultEndpointsProtocol=https;AccountKey=abc123+/def==;EndpointSuffix=x",
     "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];EndpointSuffix=x"),
    ("redis://:pw123456@cache:6379/0", "redis://[REDACTED]@cache:6379/0"),     # no user
    ("Authorization: Token opaquevalue", "Authorization: [REDACTED]"),      # any scheme
    ("curl 'x?token=abcdef123&n=1'", "curl 'x?token=[REDACTED]&n=1'"),
    ("密钥是sk-proj-abcdefghijklmnop。", "密钥是[REDACTED]。"),          # after CJK: no ``\\b`` there
    ("clé sk-abcdefghij et é", "clé [REDACTED] et é"),
    ("OPENAI_API_KEY_sk-abcdefghijk", "OPENAI_API_KEY_[REDACTED]"),
])
def test_a_value_filed_under_a_credentials_name_goes_and_the_name_stays(text: str, kept: str) -> None:
    assert R.text(text) == kept


# Ordinary text the defaults must not eat. The trade-offs decided (docs/serve.md, Redaction):
# a shape needs more than a keyword - "Bearer"/"Basic" followed by a plain word is text,
# so an all-letter bearer token is kept; key_/api_ identifiers need a 16+ run with a
# digit; a value after password= goes even when it is code, unless it is a call.
ORDINARY = [
    "The skeleton crew of the task-force met at 10:30 on 2024-05-01.",
    "sklearn and sk-learn are the same; skip the desk-lamp.",
    "Basic understanding of the bearer instruments market is assumed.",
    "The request id is 123e4567-e89b-12d3-a456-426614174000, see ticket #4521.",
    "Call 555-123-4567, pay $1,234.56 or 3.14159 EUR; 0x7fffffff is the maximum.",
    "key_performance_indicators and api_request_timeout_seconds are config names.",
    "password = input() and token: Hello are ordinary code and prose.",
    "an @mention, a C@T, user@localhost and a.b@c are not e-mail addresses here",
    "AKIA is a prefix; AKIAshort is not a key, nor is eyJ alone or eyJabc.def",
    "Das Schlüsselwort, le mot de passe: 秘密 — unchanged",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert R.text(text) == text


# Shapes a client could send to make a pattern retry from every position of a long run
# (quadratic: 100,000 letters took 10 s, a 1 MB prompt about an hour, holding the GIL -
# the whole proxy - all along). Every default pattern is linear in the text; this guards
# against a regression with a bound a linear pattern misses by orders of magnitude
# (bench/redact_cost.py measures the time per MB).
HOSTILE = ["a", "a.", "1", "key_", "sk-", "eyJ-", "eyJa.", "a@", "a@a.", "ab:", "a://:", "http://a", "http://x/?",
           "password=", "token=", "bearer ", "Basic ", "authorization:", "AKIA", " ", "=", "-", "aB1-_.",
           "-----BEGIN PRIVATE KEY-----"]


@pytest.mark.parametrize("unit", HOSTILE)
def test_redaction_is_linear_in_the_text_whatever_the_text(unit: str) -> None:
    text = unit * (200_000 // len(unit))
    started = time.perf_counter()
    R.text(text)
    without_queries(text)
    assert time.perf_counter() - started < 5.0, unit     # linear: ~0.1 s; quadratic: minutes


def _searching_every_text() -> Redactor:
    """The default redactor without its look-ups before each pattern (``_NEEDS``)."""
    r = Redactor(DEFAULT_PATTERNS)
    r._patterns = [(pattern, (), ()) for pattern, _, _ in r._patterns]
    return r


def test_every_default_pattern_has_its_look_up_before_the_search() -> None:
    # a pattern edited without its entry in _NEEDS is searched in every text: correct, but slow again
    assert all(needs or folded for _, needs, folded in R._patterns)


# the ASCII letters that case-insensitive patterns also match outside ASCII (Kelvin K, long s, dotless i)
_TWINS = ["BEARER abcdefgh1234", "ſecret=hunter22x", "api_Key: zq8w7e6r", "AUTHORİZATION: Basic dXNlcjpwYXNz",
          "pasſword=hunter22", "authorızation: x y"]


@pytest.mark.parametrize("text", [*SECRETS, *ORDINARY, *HOSTILE, *_TWINS, "token=abcdef1 k_live_ab sk-", "x: y=z"])
def test_the_look_ups_before_each_pattern_change_nothing_it_finds(text: str) -> None:
    every = _searching_every_text()
    for variant in (text, f"before {text} after", text.upper(), text.lower(), f'{{"arg": "{text}"}}'):
        assert R.text(variant) == every.text(variant), variant


@given(st.text(alphabet="aAbBeErRsSkK-_:=@./ 0123456789tTolLpPwWyYJıſİ\u212a", max_size=60))
def test_the_look_ups_change_nothing_in_any_text(text: str) -> None:
    assert R.text(text) == _searching_every_text().text(text)


def test_a_requests_header_credentials_are_removed_verbatim() -> None:
    headers = [(b"authorization", b"Bearer opaquekeyvalue"), (b"x-goog-api-key", b"zzzopaquezzz"),
               (b"cookie", b"sid=cookievalue42abcdef; theme=darkmode; consent=accepted"), (b"x-request-id", b"trace-1"),
               (b"api-key", b"abc"), (b"x-session-affinity", b"python")]
    secrets = header_secrets(headers)
    assert {"Bearer opaquekeyvalue", "opaquekeyvalue", "zzzopaquezzz", "cookievalue42abcdef"} == set(secrets)
    scrubbed = R.with_literals(secrets)
    echoed = "Incorrect API key provided: opaquekeyvalue; zzzopaquezzz; sid cookievalue42abcdef; abc stays (too short)"
    assert scrubbed.text(echoed) == f"Incorrect API key provided: {MARK}; {MARK}; sid {MARK}; abc stays (too short)"
    assert scrubbed.value({"opaquekeyvalue": ["x zzzopaquezzz"]}) == {MARK: [f"x {MARK}"]}
    assert R.text(echoed) == echoed      # (no pattern knows them: only the headers tell)
    assert Redactor(()).with_literals(secrets).text("k=opaquekeyvalue") == f"k={MARK}"
    # whole words only, and no preference cookie: ordinary answers stay readable
    prose = "I accepted the darkmode theme; python is pythonic; zzzopaquezzzz and xopaquekeyvalue differ"
    assert scrubbed.text(prose) == prose


def test_many_long_cookies_never_crowd_out_a_key_from_the_headers_or_the_body() -> None:
    """A browser-fronted client sends dozens of long cookies: kept by length, 40 of them
    pushed its API key (16 characters) out of the strings removed verbatim."""
    cookies = "; ".join(f"c{i}={chr(97 + i % 26) * 40}{i:03d}" for i in range(40))
    secrets = header_secrets([(b"cookie", cookies.encode()), (b"authorization", b"Bearer Zz9YyXxWwVv8Uu7T")])
    scrubbed = R.with_literals(secrets).with_literals(body_secrets({"api_key": "opaquebodykey77"}))
    said = "Incorrect API key provided: Zz9YyXxWwVv8Uu7T, opaquebodykey77"
    assert scrubbed.text(said) == f"Incorrect API key provided: {MARK}, {MARK}"
    assert R.with_literals(secrets).value({"error": said})["error"].count(MARK) == 1   # (the body's: not known)


def test_many_credential_headers_never_crowd_out_the_bodys_credentials() -> None:
    headers = [(b"authorization", b"Bearer abcdefghijklmnopqrstuvwx"), (b"x-api-key", b"xapikeyvaluexyz"),
               *[(f"x-token-{i}".encode(), f"v1 tokenvalue{chr(97 + i % 26) * 4}{i:02d}".encode())
                 for i in range(30)],
               (b"cookie", "; ".join(f"c{i}={'q' * 30}{i:03d}" for i in range(20)).encode())]
    body = {"api_key": "bodyapikeyletters", "user": "bodyuserletters"}
    scrubbed = R.with_literals(header_secrets(headers)).with_literals(body_secrets(body))
    said = " ".join(["bodyapikeyletters", "bodyuserletters", "xapikeyvaluexyz", "tokenvaluedddd29",
                     "abcdefghijklmnopqrstuvwx"])
    assert scrubbed.text(said) == " ".join([MARK] * 5)


@given(st.lists(st.text(alphabet="ab sk-AKIA0123456789@.", max_size=12), max_size=12))
def test_redacted_tokens_join_to_the_redacted_text(tokens: list[str]) -> None:
    redacted = R.tokens(tokens)
    assert redacted is not None and len(redacted) == len(tokens)
    assert "".join(redacted) == R.text("".join(tokens))


def test_a_key_spelt_over_several_tokens_is_cut_from_each() -> None:
    tokens = ["my", " key", " is", " sk", "-abc", "123", "45678", " ok"]
    assert R.tokens(tokens) == ["my", " key", " is", f" {MARK}", "", "", "", " ok"]


def test_keys_redacted_alike_are_both_kept() -> None:
    assert R.value({"a@x.io": 1, "b@x.io": 2, "c@x.io": 3}) == {MARK: 1, f"{MARK}'2": 2, f"{MARK}'3": 3}


def test_no_patterns_changes_nothing_but_the_credential_fields() -> None:
    pair = _pair("sk-abcdefgh12")
    kept = Redactor([]).pair(pair)
    assert kept.prompt == pair.prompt and kept.answers == pair.answers
    assert kept.request == {"model": "m", "messages": pair.request["messages"]}


def _pair(secret: str) -> Pair:
    answer = Answer(Side.BASELINE, "m", text=f"echo {secret}", reasoning=f"think {secret}", refusal=f"no {secret}",
                    tool_calls=[{"id": "1", "type": "function",
                                 "function": {"name": "f", "arguments": f'{{"k": "{secret}"}}'}}],
                    tokens=["echo ", secret[:3], secret[3:]], error=f"HTTP 500: {secret}",
                    others=(Choice(1, text=f"two {secret}", reasoning=secret, refusal=secret,
                                   tool_calls=[{"function": {"arguments": secret}}]),))
    return Pair(key="k", seq=1, endpoint="/v1/chat/completions", prompt=f"say {secret}",
                request={"model": "m", "messages": [{"role": "user", "content": f"say {secret}"}],
                         "api_key": "plain", "user": "alice"},
                comparison=Comparison(Outcome.DIVERGENT, 0.5, None, 0, None, 1.0),
                answers={Side.BASELINE: answer, Side.CANDIDATE: answer, Side.REPLICA: answer},
                category=secret, signals=[{"kind": "label", "value": {secret: secret}, "reason": secret}])


def test_a_pair_is_redacted_in_every_part_it_stores() -> None:
    secret = "sk-proj-Zx12Yw34"
    pair = _pair(secret)
    stored = R.pair(pair)
    assert secret not in repr(stored) and secret[3:] not in repr(stored)
    assert "api_key" not in stored.request and "user" not in stored.request
    assert stored.answers[Side.REPLICA].others[0].text == f"two {MARK}"
    assert stored.comparison == pair.comparison    # measured on the true answers, kept as it was
    assert secret in repr(pair)                    # and the pair it was made from is untouched


def test_error_texts_lose_the_query_string_and_the_request() -> None:
    import aiohttp
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL

    url = URL("http://127.0.0.1:9/v1/chat/completions?api-key=plainsecret")
    info = aiohttp.RequestInfo(url, "POST", CIMultiDictProxy(CIMultiDict({"Authorization": "Bearer plainsecret"})),
                               url)
    exc = aiohttp.ClientResponseError(info, (), status=400, message="Invalid status line 'NOPE'")
    assert "plainsecret" in f"{exc} {exc!r}"        # what aiohttp says...
    assert "plainsecret" not in failure_text(exc)   # ...and what is kept
    assert failure_text(exc) == "ClientResponseError: HTTP 400, Invalid status line 'NOPE'"
    assert without_queries("see 'https://h/p?a=1&b=2' and http://h/q") == f"see 'https://h/p?{MARK}' and http://h/q"


def test_log_records_are_redacted_with_their_arguments_and_traceback() -> None:
    record = logging.LogRecord("shadowdiff.proxy", logging.WARNING, __file__, 1, "failed: %s at %s",
                               ("sk-abcdefgh12", "http://h/x?token=plainsecret"), None)
    try:
        raise ValueError("boom Bearer abcdef123456")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert LogRedaction().filter(record)
    text = logging.Formatter().format(record)
    assert "sk-abcdefgh12" not in text and "plainsecret" not in text and "abcdef123456" not in text
    assert "failed: [REDACTED] at http://h/x?[REDACTED]" in text and "ValueError: boom [REDACTED]" in text


def test_many_keys_or_tokens_redacted_alike_cost_linear_time() -> None:
    # A client's metadata of 8,000 keys that all redact to one took 43 s (a quote added
    # per earlier clash: cubic), and an answer's tokens were walked against every match.
    keys = {f"sk-{i:08d}": i for i in range(20_000)}
    tokens = ["mail ", "a@b.cd", " "] * 10_000
    started = time.perf_counter()
    redacted = R.value(keys)
    cut = R.tokens(tokens)
    assert time.perf_counter() - started < 5.0        # linear: ~0.2 s; before: hours
    assert len(redacted) == len(keys) and sorted(redacted.values()) == list(range(20_000))
    assert cut is not None and len(cut) == len(tokens) and cut[1] == MARK and "".join(cut).count("@") == 0


def test_short_clean_texts_are_remembered_and_secrets_never() -> None:
    r = Redactor(DEFAULT_PATTERNS)
    assert r.text("content") == "content" and "content" in r._clean
    assert r.text("Bearer abcdefgh1234") == MARK and "Bearer abcdefgh1234" not in r._clean
    long_text = "a plain sentence " * 20   # past CLEAN_LENGTH: searched every time, never held
    assert r.text(long_text) == long_text and long_text not in r._clean
    # a copy with literals shares what the patterns do not match, and still finds its literals there
    scrubbed = r.with_literals(["opaquekeyvalue"])
    assert r.text("opaquekeyvalue") == "opaquekeyvalue" and "opaquekeyvalue" in r._clean
    assert scrubbed.text("opaquekeyvalue") == MARK
    assert scrubbed.value({"opaquekeyvalue": "content"}) == {MARK: "content"}


def test_the_texts_remembered_are_bounded() -> None:
    r = Redactor(DEFAULT_PATTERNS)
    for i in range(CLEAN_TEXTS + 10):
        r.text(f"word{i}")
    assert 0 < len(r._clean) <= CLEAN_TEXTS
    assert r.text("word1") == "word1"


def test_a_text_holding_a_requests_credential_is_never_remembered() -> None:
    r = Redactor(DEFAULT_PATTERNS)
    scrubbed = r.with_literals(header_secrets([(b"x-api-key", b"opaqueKEY9999zz")]))
    for text in ("opaqueKEY9999zz", "your key opaqueKEY9999zz is wrong", "xopaqueKEY9999zzx"):
        scrubbed.text(text)
        assert text not in r._clean
    assert scrubbed.text("your key opaqueKEY9999zz is wrong") == f"your key {MARK} is wrong"


def test_a_certificate_failure_says_so_not_the_os_errors_text() -> None:
    import ssl

    import aiohttp
    from aiohttp.client_reqrep import ConnectionKey

    key = ConnectionKey("127.0.0.1", 19130, True, True, None, None, None)
    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                                            "self-signed certificate (_ssl.c:1006)")
    said = failure_text(aiohttp.ClientConnectorCertificateError(key, cause))
    assert "cannot connect to 127.0.0.1:19130: TLS: " in said and "self-signed certificate" in said
    assert "Operation not permitted" not in said
