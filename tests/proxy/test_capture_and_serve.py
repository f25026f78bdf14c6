"""The capture log (and replaying it), redaction, and ``shadowdiff serve`` as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.answers.redact import MARK, Redactor
from shadowdiff.proxy.settings import DEFAULT_REDACTIONS, CaptureSettings
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.runner import ReplaySettings
from shadowdiff.report.write import write_reports
from shadowdiff.simulator import profiles
from shadowdiff.store import Store
from shadowdiff.store.members import STALE_AFTER, RunMembers
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.proxying import FP8, chat, settled, wait_for
from tests.support.servers import HTTP, free_port, shadowdiff_process, wait_ready
from tests.support.storing import silence

Start = Callable[..., Any]


def test_redaction() -> None:
    redactor = Redactor(DEFAULT_REDACTIONS)
    text = "mail jane.doe@example.com, key sk-abcdefghijklmnop1234, header Bearer abc.def-ghi_123"
    assert redactor.text(text) == f"mail {MARK}, key {MARK}, header {MARK}"
    assert redactor.value({"a": [text, 3, None], "b": {"c": "x@y.io"}}) == {
        "a": [redactor.text(text), 3, None], "b": {"c": MARK}}
    assert Redactor([]).text(text) == text


def test_captured_traffic_replays_to_the_same_pairs(start_simulator: Start, start_proxy: Start,
                                                    tmp_path: Path) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    capture = tmp_path / "capture.jsonl"
    proxy, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, store=str(tmp_path / "live"),
                             keep_rate=1.0, capture=CaptureSettings(capture))
    prompts = [f"Question {i}: explain {t}." for i, t in enumerate(["rivers", "taxes", "bridges", "clouds"] * 5)]
    secret = {"Authorization": "Bearer sk-live-secret-token-123456"}
    for i, prompt in enumerate(prompts):
        r = HTTP.post(proxy + "/v1/chat/completions", json=chat(prompt, stream=True),
                      headers={"X-Request-Id": f"req-{i}", **secret})
        assert r.status_code == 200
    pii = chat("Write to jane.doe@example.com with the key sk-abcdefghijklmnop1234", stream=True)
    assert HTTP.post(proxy + "/v1/chat/completions", json=pii, headers={"X-Request-Id": "pii", **secret}).is_success
    settled(app)
    app.writer.close()
    app.capture.close()
    app.writer = app.capture = None
    lines = [json.loads(line) for line in capture.read_text().splitlines()]
    assert len(lines) == 21
    first = lines[0]
    assert set(first) == {"custom_id", "method", "url", "body"}
    assert first["custom_id"].startswith("req-0-")  # the client's X-Request-Id, made unique
    assert (first["method"], first["url"]) == ("POST", "/v1/chat/completions")
    assert first["body"] == chat(prompts[0], stream=True)
    captured_pii = next(line for line in lines if line["custom_id"].startswith("pii-"))
    assert captured_pii["body"]["messages"][0]["content"] == f"Write to {MARK} with the key {MARK}"
    assert "sk-live-secret-token" not in capture.read_text()
    # replay the capture against the same servers: the same pairs come out
    out = tmp_path / "replayed"
    run_replay(ReplaySettings(log=capture, baseline=Upstream(Side.BASELINE, primary),
                              candidate=Upstream(Side.CANDIDATE, shadow, FP8)), out, None, resume=False)
    live_store, replay_store = Store.open(tmp_path / "live"), Store.open(out)
    live_run, replay_run = live_store.latest_run("serve"), replay_store.latest_run("replay")
    assert live_run is not None and replay_run is not None
    live = {p["key"]: p["outcome"] for p in live_store.pairs(live_run.id) if not p["key"].startswith("pii-")}
    replayed = {p["key"]: p["outcome"] for p in replay_store.pairs(replay_run.id)
                if not p["key"].startswith("pii-")}
    assert len(live) == 20
    assert replayed == live
    stored_pii = next(p for p in live_store.pairs(live_run.id) if p["key"].startswith("pii-"))
    assert "jane.doe" not in stored_pii["prompt"]
    assert "jane.doe" not in json.dumps(stored_pii["request"])
    # authorization headers are written nowhere
    for path in (tmp_path / "live", out):
        for file in path.iterdir():
            assert b"sk-live-secret-token" not in file.read_bytes(), file
    # the run records each side's engine as replay does, and its reports say it ran against simulators
    wait_for(lambda: "simulated" in live_store.run(live_run.id).settings)
    recorded = live_store.run(live_run.id).settings
    assert recorded["versions"] == {"baseline": "0.34.0", "candidate": "0.34.0"}
    assert sorted(recorded["simulated"]) == ["baseline", "candidate"]
    write_reports(live_store, live_run.id, tmp_path / "report")
    for name in ("report.md", "report.html"):
        assert "SIMULATED: the baseline and the candidate are" in (tmp_path / "report" / name).read_text(), name
    live_store.close()
    replay_store.close()


def test_capture_rotates(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    primary = start_simulator()
    capture = tmp_path / "c.jsonl"
    proxy, app = start_proxy(primary=primary, capture=CaptureSettings(capture, max_bytes=2048, keep=2))
    for i in range(40):
        HTTP.post(proxy + "/v1/completions", json={"prompt": f"prompt number {i} " * 5, "max_tokens": 1})
    app.capture.close()
    app.capture = None
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["c.jsonl", "c.jsonl.1", "c.jsonl.2"]
    assert all((tmp_path / f).stat().st_size <= 2048 for f in files)
    total = sum(len((tmp_path / f).read_text().splitlines()) for f in files)
    assert 0 < total < 40  # older rotations are dropped past --capture-keep


def serve_command(primary: str, shadow: str, store: Path, *extra: str) -> list[str]:
    return ["serve", "--primary", primary, "--shadow", shadow, "--shadow-model", FP8, "--store", str(store),
            "--keep-rate", "1", *extra]


def test_serve_process_finishes_streams_and_flushes_pairs_on_sigterm(tmp_path: Path) -> None:
    from shadowdiff.simulator.app import build_app
    from shadowdiff.simulator.scheduler import LatencyModel
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import serve_app

    slow = LatencyModel(tpot=0.02)
    with serve_app(build_app(SimulatorSettings(latency=slow))) as primary, \
            serve_app(build_app(SimulatorSettings(served_model_names=(FP8,), latency=slow))) as shadow, \
            shadowdiff_process(*serve_command(primary, shadow, tmp_path / "store")) as (process, proxy):
        wait_ready(proxy + "/readyz", process)
        with HTTP.stream("POST", proxy + "/v1/chat/completions", json=chat("Explain rivers.", stream=True)) as r:
            pieces = r.iter_raw()
            received = next(pieces)
            process.send_signal(signal.SIGTERM)
            received += b"".join(pieces)
        assert received.endswith(b"data: [DONE]\n\n")
        assert process.wait(30) == 0     # a shutdown asked for and carried out (docs/serve.md, "Exit codes of `serve`")
    store = Store.open(tmp_path / "store")
    run = store.latest_run("serve")
    assert run is not None
    assert run.finished_at is not None
    assert store.count_pairs(run.id) == 1  # compared after the stream ended, stored before exit
    store.close()


def test_settings_come_from_flags_environment_and_a_config_file(tmp_path: Path) -> None:
    from shadowdiff.simulator.app import build_app
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import serve_app

    config = tmp_path / "shadowdiff.toml"
    with serve_app(build_app(SimulatorSettings())) as primary:
        config.write_text(f'primary = "{primary}"\nsample_rate = 0.5\nlabel = ["gpu=H100"]\n')
        # (the primary as its own shadow: allowed from the environment too)
        env = {**os.environ, "SHADOWDIFF_STORE": str(tmp_path / "from-env"), "SHADOWDIFF_SHADOW": primary,
               "SHADOWDIFF_SAMPLE_RATE": "0.25", "SHADOWDIFF_ALLOW_SAME_TARGET": "1"}
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "shadowdiff", "serve", "--config", str(config), "--port",
                                    str(port), "--sample-rate", "0.75"], env=env, stderr=subprocess.PIPE)
        try:
            wait_ready(f"http://127.0.0.1:{port}/healthz", process)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
            assert process.stderr is not None
            process.stderr.close()
    store = Store.open(tmp_path / "from-env")  # the store came from the environment
    run = store.latest_run("serve")
    assert run is not None
    assert run.settings["primary"] == primary  # from the config file
    assert run.settings["sample_rate"] == 0.75  # the flag beats the environment and the file
    assert run.settings["labels"] == {"gpu": "H100"}
    store.close()


@pytest.mark.parametrize(("args", "message"), [
    (("--primary", "not-a-url"), "--primary 'not-a-url' has no scheme"),
    (("--primary", "http://x", "--sample-rate", "2"), "--sample-rate must be within 0..1"),
    (("--primary", "http://x", "--label", "oops"), "--label expects KEY=VALUE"),
    (("--primary", "http://x", "--redact", "("), "is not a valid regular expression"),
])
def test_bad_settings_are_usage_errors(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = cli.shadowdiff("serve", *args, "--store", str(tmp_path / "s"))
    assert result.returncode == 2
    assert message in result.stderr
    config = tmp_path / "bad.toml"
    config.write_text('primary = "http://x"\ncolour = "red"\n')
    result = cli.shadowdiff("serve", "--config", str(config))
    assert result.returncode == 2
    assert "unknown settings colour" in result.stderr


def test_serve_refuses_an_unusable_store(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    port = free_port()
    result = cli.shadowdiff("serve", "--primary", "http://127.0.0.1:1",
                            "--shadow", "http://127.0.0.1:2", "--store", str(tmp_path / "file" / "sub.sqlite"),
                            "--port", str(port))
    assert result.returncode == 3  # uvicorn's "startup failed"
    assert "cannot use store" in result.stderr
    assert "Application startup failed" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_killed_proxys_run_is_open_until_closed_by_hand(tmp_path: Path) -> None:
    """kill -9 leaves the run open, and report says INCOMPLETE; `shadowdiff close`
    closes it once the proxy is gone, and the report stays INCOMPLETE: the killed proxy's
    last pairs and counts are missing, so what it served was not all checked.
    A replay's run is never closed by hand."""
    from shadowdiff.simulator.app import build_app
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import serve_app

    store = tmp_path / "store"
    with serve_app(build_app(SimulatorSettings(served_model_names=(FP8,)))) as both, \
            shadowdiff_process(*serve_command(both, both, store)) as (process, proxy):
        wait_ready(proxy + "/readyz", process)
        for i in range(3):
            assert HTTP.post(proxy + "/v1/chat/completions", json=chat(f"Explain tides {i}.")).status_code == 200
        wait_for(lambda: stored_pairs(store) == 3)   # stored (its writer flushes within a second)
        process.kill()
        process.wait(10)

    def shadowdiff(*args: str) -> cli.Ran:
        return cli.shadowdiff(*args)

    opened = Store.open(store)
    run = opened.latest_run("serve")
    assert run is not None and run.finished_at is None
    opened.close()
    before = shadowdiff("report", str(store), "--out", str(tmp_path / "before"))
    assert before.returncode == 2 and "still open" in before.stdout, before.stdout + before.stderr
    assert shadowdiff("close", str(store)).returncode == 2   # --run is required: never a guess
    # just killed, its last heartbeat is fresh: it could be a live proxy, so close waits for silence
    early = shadowdiff("close", str(store), "--run", run.id)
    assert early.returncode == 1 and "1 proxy still running" in early.stderr and "--force" in early.stderr
    opened = Store.open(store)
    silence(opened, run.id, RunMembers(opened).members(run.id)[0].id, STALE_AFTER + 1)
    opened.close()
    closed = shadowdiff("close", str(store), "--run", run.id)
    assert closed.returncode == 0 and f"closed run {run.id}" in closed.stdout, closed.stderr
    assert "1 of its proxies that never stopped" in closed.stdout
    after = shadowdiff("report", str(store), "--out", str(tmp_path / "after"))
    assert after.returncode == 2 and "3 pairs: 3 compared (3 identical," in after.stdout, after.stdout + after.stderr
    assert "1 of the run's proxies stopped without writing all they compared" in after.stdout
    assert "(serve, started " in after.stdout and ", 1 proxy, 1 lost (killed" in after.stdout.splitlines()[0]
    again = shadowdiff("close", str(store), "--run", run.id)
    assert again.returncode == 1 and "already closed" in again.stderr
    opened = Store.open(store)
    replay_run = opened.create_run("replay", {})
    opened.close()
    refused = shadowdiff("close", str(store), "--run", replay_run)
    assert refused.returncode == 1 and "not closed by hand" in refused.stderr and "--resume" in refused.stderr


def stored_pairs(location: Path) -> int:
    opened = Store.open(location)
    try:
        run = opened.latest_run("serve")
        return opened.count_pairs(run.id) if run else 0
    finally:
        opened.close()
