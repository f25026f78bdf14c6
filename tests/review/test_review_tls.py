"""The review UI's cookies are Secure where they should be: ``serve`` and
``review`` with ``--tls-cert/--tls-key`` serve HTTPS (every worker), and with
``--forwarded-allow-ips`` believe X-Forwarded-Proto from those proxies only. Real
processes on loopback, a self-signed certificate made by the openssl command."""

from __future__ import annotations

import contextlib
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowdiff.store import Store
from tests.support import cli
from tests.support.factories import fill
from tests.support.reviewing import TOKEN
from tests.support.servers import free_port
from tests.support.tools import tool


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tool("openssl", "apt-get install openssl")     # skipped without it, except under CI
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.fixture
def review_store(tmp_path: Path) -> Path:
    store = Store.open(tmp_path / "store")
    fill(store)
    store.close()
    return tmp_path / "store"


def trusting(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


@contextlib.contextmanager
def running(args: list[str], ready: str, verify: Any = True,
            env: dict[str, str] | None = None) -> Iterator[str]:
    """``shadowdiff ARGS --port P``; yields its base URL (http or https) once ``ready`` answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "shadowdiff", *args, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    base = f"{'https' if '--tls-cert' in args else 'http'}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(base + ready, verify=verify, timeout=1).status_code < 500:
                    break
            assert time.monotonic() < deadline, f"{base}{ready} did not answer"
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(15)
        if process.stderr is not None:
            process.stderr.close()


def session_cookie(base: str, verify: Any = True, **headers: str) -> str:
    """The Set-Cookie header of a sign-in, with a fresh connection each time."""
    response = httpx.post(base + "/review/login", data={"token": TOKEN, "reviewer": "ana"}, headers=headers,
                          verify=verify)
    assert response.status_code == 303, response.text
    return next(c for c in response.headers.get_list("set-cookie") if c.startswith("shadowdiff_review="))


def serve_args(primary: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["serve", "--primary", primary, "--review-token", TOKEN, "--store", str(tmp_path / "serve-store"),
            *extra]


def test_serve_with_tls_serves_https_from_every_worker(start_simulator: Any, tmp_path: Path,
                                                       certificate: tuple[Path, Path]) -> None:
    from tests.support.proxying import chat

    cert, key = certificate
    primary = start_simulator()
    args = serve_args(primary, tmp_path, "--workers", "2", "--tls-cert", str(cert), "--tls-key", str(key))
    with running(args, "/healthz", verify=trusting(cert)) as base:
        assert base.startswith("https://")
        # fresh connections, spread over the two workers by the kernel: each must be TLS
        for _ in range(12):
            cookie = session_cookie(base, verify=trusting(cert))
            assert "; Secure" in cookie or "; secure" in cookie.lower()
        answered = httpx.post(base + "/v1/chat/completions", json=chat("Say hi."), verify=trusting(cert), timeout=30)
        assert answered.status_code == 200 and answered.json()["choices"]      # the proxy itself over https
        with pytest.raises(httpx.TransportError):
            httpx.get(base.replace("https://", "http://") + "/healthz", timeout=2).raise_for_status()


@pytest.mark.parametrize(("allowed", "secure"), [("127.0.0.1", True), ("10.9.9.0/24, ::1", False), (None, False)])
def test_serve_believes_forwarded_proto_only_from_the_allowed(start_simulator: Any, tmp_path: Path,
                                                              allowed: str | None, secure: bool) -> None:
    primary = start_simulator()
    extra = ["--forwarded-allow-ips", allowed] if allowed else []
    with running(serve_args(primary, tmp_path, *extra), "/healthz") as base:
        cookie = session_cookie(base, **{"x-forwarded-proto": "https"})
        assert ("secure" in cookie.lower()) is secure, cookie
        assert "secure" not in session_cookie(base).lower()          # without the header: plain http


def test_review_with_tls_and_behind_a_trusted_proxy(review_store: Path, certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    with running(["review", str(review_store), "--token", TOKEN, "--tls-cert", str(cert), "--tls-key", str(key)],
                 "/review/login", verify=trusting(cert)) as base:
        assert "secure" in session_cookie(base, verify=trusting(cert)).lower()
    # the option by its environment variable, as the other settings
    with running(["review", str(review_store), "--token", TOKEN], "/review/login",
                 env={"SHADOWDIFF_FORWARDED_ALLOW_IPS": "127.0.0.1"}) as base:
        assert "secure" in session_cookie(base, **{"x-forwarded-proto": "https"}).lower()
    # by default nobody is believed, not even a proxy on the same machine (uvicorn alone
    # would trust 127.0.0.1), nor what uvicorn's own FORWARDED_ALLOW_IPS says
    with running(["review", str(review_store), "--token", TOKEN], "/review/login",
                 env={"FORWARDED_ALLOW_IPS": "*"}) as base:
        assert "secure" not in session_cookie(base, **{"x-forwarded-proto": "https"}).lower()


@pytest.mark.parametrize(("flags", "message"), [
    (["--tls-cert", "{cert}"], "--tls-cert and --tls-key go together"),
    (["--tls-key", "{key}"], "--tls-cert and --tls-key go together"),
    (["--tls-cert", "{missing}", "--tls-key", "{key}"], "cannot read it"),
    (["--tls-cert", "{key}", "--tls-key", "{cert}"], "are not a PEM certificate and its private key"),
    (["--tls-cert", "{cert}", "--tls-key", "{encrypted}"], "is encrypted"),
    (["--forwarded-allow-ips", "10.0.0.1/8"], "not an address or a network"),
    (["--forwarded-allow-ips", "ingress.local"], "not an address or a network"),
])
def test_bad_transport_options_are_usage_errors(review_store: Path, tmp_path: Path, certificate: tuple[Path, Path],
                                                flags: list[str], message: str) -> None:
    cert, key = certificate
    encrypted = tmp_path / "encrypted.pem"
    subprocess.run(["openssl", "pkey", "-in", str(key), "-out", str(encrypted), "-aes256", "-passout", "pass:secret"],
                   check=True, capture_output=True)
    names = {"cert": cert, "key": key, "missing": tmp_path / "nothing.pem", "encrypted": encrypted}
    given = [flag.format(**names) for flag in flags]
    for command in (["review", str(review_store)], serve_args("http://127.0.0.1:1", tmp_path)):
        done = cli.shadowdiff(*command, *given, "--port", str(free_port()))
        assert done.returncode == 2, (command, done.stderr)
        assert message in done.stderr, done.stderr
