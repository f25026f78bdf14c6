"""A client's credentials through a real ``shadowdiff serve``: those in the body are
never kept, even where an upstream repeats them; those for an upstream (its URL's
userinfo, ``--shadow-api-key``, the client's Authorization) combine by one rule and
never fail a request."""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from yarl import URL

from shadowdiff.answers.redact import MARK
from shadowdiff.proxy.upstream import credentials
from tests.support.proxying import serve, stop

# Opaque (no pattern knows them): only their being sent can tell they are secrets.
BODY_SECRETS = {"api_key": "opaquebodykey77", "user": "enduser-4711", "key": "plainkeyvalue1",
                "token": "plaintokenvalue2", "password": "hunter2hunter2", "secret": "plainsecretthree",
                "access_token": "accesstokenplain4"}


class _Recording(ThreadingHTTPServer):
    """A chat upstream that records the Authorization of each request and answers as
    ``mode`` says: ``echo`` repeats the body's credentials in its answer's text,
    reasoning and tool call; ``refuse`` in a 401's error ("Incorrect API key provided: …")."""

    daemon_threads = True

    def __init__(self, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = mode
        self.authorizations: list[str | None] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Recording

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:   # (the proxy's start-up probe)
        self._send(404, {"error": "not here"})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.authorizations.append(self.headers.get("authorization"))
        said = " ".join(str(request.get(field)) for field in BODY_SECRETS)
        if self.server.mode == "refuse":
            self._send(401, {"error": {"message": f"Incorrect API key provided: {said}", "code": "invalid_api_key"}})
            return
        message = {"role": "assistant", "content": f"You sent {said}", "reasoning_content": f"They sent {said}",
                   "tool_calls": [{"id": "c1", "type": "function",
                                   "function": {"name": "f", "arguments": json.dumps({"said": said})}}]}
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}})

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def _upstream(mode: str) -> Iterator[_Recording]:
    server = _Recording(mode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _with_userinfo(url: str, userinfo: str) -> str:
    return url.replace("http://", f"http://{userinfo}@")


def _chat(proxy: str, headers: dict[str, str], **extra: object) -> httpx.Response:
    body = {"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "hello"}], **extra}
    return httpx.post(f"{proxy}/v1/chat/completions", json=body, headers=headers, timeout=30)


def _run_counts(store: Path) -> int:
    db = sqlite3.connect(store / "shadowdiff.sqlite")
    try:
        return int(db.execute("SELECT coalesce(sum(pairs), 0) FROM run_counts WHERE of = 'pairs'").fetchone()[0])
    finally:
        db.close()


def test_body_credentials_echoed_by_upstreams_are_kept_nowhere(tmp_path: Path) -> None:
    store, log, capture = tmp_path / "store", tmp_path / "serve.log", tmp_path / "capture.jsonl"
    with _upstream("echo") as primary, _upstream("refuse") as shadow, \
            serve((primary.url, shadow.url), str(store), log, "--capture", str(capture),
                  "--log-level", "debug") as (process, proxy):
        answer = _chat(proxy, {}, **BODY_SECRETS)
        # the client's answer is untouched
        assert answer.status_code == 200
        assert BODY_SECRETS["api_key"] in answer.json()["choices"][0]["message"]["content"]
        stop(process, log)
    db = sqlite3.connect(store / "shadowdiff.sqlite")
    texts = [r[0] for r in db.execute("SELECT text FROM answers WHERE text LIKE 'You sent%'")]
    errors = [r[0] for r in db.execute("SELECT error FROM answers WHERE error IS NOT NULL")]
    db.close()
    assert texts and errors and all(MARK in t for t in texts + errors), (texts, errors)
    assert any("Incorrect API key provided" in e for e in errors), errors
    assert capture.read_text().strip()
    places = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    leaks = [(name, p) for name, value in BODY_SECRETS.items() for p, content in places.items()
             if value.encode() in content]
    assert not leaks, leaks


def _basic(userinfo: str) -> str:
    return "Basic " + base64.b64encode(userinfo.encode()).decode()


def test_url_userinfo_api_key_and_client_authorization_combine(tmp_path: Path) -> None:
    """--shadow-api-key first, then the URL's userinfo, then the client's Authorization."""
    client = {"Authorization": "Bearer client-token-1"}
    cases = [  # (primary userinfo, shadow userinfo, --shadow-api-key) -> what each side receives
        ("pu:ppw", "su:spw", None),
        (None, "su:spw", "shadow-key-1"),
        (None, None, "shadow-key-1"),
        (None, None, None),
    ]
    for i, (primary_info, shadow_info, api_key) in enumerate(cases):
        store, log = tmp_path / f"store{i}", tmp_path / f"serve{i}.log"
        with _upstream("echo") as primary, _upstream("echo") as shadow:
            urls = (_with_userinfo(primary.url, primary_info) if primary_info else primary.url,
                    _with_userinfo(shadow.url, shadow_info) if shadow_info else shadow.url)
            args = ("--shadow-api-key", api_key) if api_key else ()
            with serve(urls, str(store), log, *args) as (process, proxy):
                answers = [_chat(proxy, client), _chat(proxy, {})]
                stop(process, log)
            assert [a.status_code for a in answers] == [200, 200], log.read_text()
            text = log.read_text()
            assert "ERROR" not in text and "Cannot combine" not in text, text
            assert _run_counts(store) == 2, text
            want_primary = _basic(primary_info) if primary_info else None
            assert primary.authorizations == [want_primary or client["Authorization"], want_primary], i
            want_shadow = (f"Bearer {api_key}" if api_key else _basic(shadow_info) if shadow_info else None)
            assert shadow.authorizations == [want_shadow or client["Authorization"], want_shadow], i


def test_url_userinfo_beyond_latin_1_is_sent_in_utf_8() -> None:
    """(aiohttp's BasicAuth, which this replaced, raised on what Latin-1 cannot encode)"""
    url, chosen = credentials(URL("http://j%C3%B6rg:%D0%BF%D0%B0%D1%80%D0%BE%D0%BB%D1%8C@host:8000/v1"), None, None)
    assert str(url) == "http://host:8000/v1"
    assert chosen == _basic("jörg:пароль")
