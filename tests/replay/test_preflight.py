"""Before a replay: each side's /v1/models, over real HTTP, through the CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.servers import free_port

BASE, FP8 = "Qwen/Qwen3-8B", "Qwen/Qwen3-8B-FP8"


def write_log(tmp_path: Path, model: str | None = BASE) -> Path:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Explain topic {i}."}],
                                       **({"model": model} if model else {})}) + "\n" for i in range(4)))
    return log


def replay(log: Path, out: Path, baseline: str, candidate: str, *args: str) -> cli.Ran:
    return cli.shadowdiff("replay", str(log), "--baseline", baseline,
                          "--candidate", candidate, "--out", str(out), "--max-tokens", "16", *args)


def test_a_candidate_serving_one_other_name_gets_it(start_simulator: Callable[..., str], tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8,))
    result = replay(write_log(tmp_path), tmp_path / "out", base, cand)
    assert result.returncode == 0, result.stderr
    assert f"note: the candidate serves '{FP8}', not the log's '{BASE}'" in result.stderr
    store = Store.open(tmp_path / "out")
    run = store.latest_run()
    assert run is not None and run.settings["sides"]["candidate"]["model"] == FP8
    pairs = list(store.pairs(run.id))
    assert len(pairs) == 4 and all(p["outcome"] != "error" for p in pairs)
    assert all(p.answers[Side.CANDIDATE].model == FP8 and p.answers[Side.BASELINE].model == BASE for p in pairs)
    store.close()


def test_a_log_without_model_names_is_mapped_on_both_sides(start_simulator: Callable[..., str],
                                                            tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8,))
    result = replay(write_log(tmp_path, model=None), tmp_path / "out", base, cand)
    assert result.returncode == 0, result.stderr
    assert "serves" not in result.stderr                     # nothing was replaced: nothing to say
    store = Store.open(tmp_path / "out")
    run = store.latest_run()
    assert run is not None
    assert {s: v["model"] for s, v in run.settings["sides"].items()} == {"baseline": BASE, "candidate": FP8}
    store.close()


def test_a_log_without_model_names_leaves_a_many_model_server_its_default(start_simulator: Callable[..., str],
                                                                          tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE, "sql-lora"))   # a base model and a LoRA adapter
    cand = start_simulator(served_model_names=(FP8,))
    result = replay(write_log(tmp_path, model=None), tmp_path / "out", base, cand)
    assert result.returncode == 0, result.stderr
    store = Store.open(tmp_path / "out")
    run = store.latest_run()
    assert run is not None and run.settings["sides"]["baseline"]["model"] is None
    assert all(p["outcome"] != "error" for p in store.pairs(run.id))
    store.close()


def test_an_ambiguous_or_missing_model_stops_the_run_before_it_starts(start_simulator: Callable[..., str],
                                                                      tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8, "Qwen/Qwen3-8B-AWQ"))
    log = write_log(tmp_path)
    result = replay(log, tmp_path / "out", base, cand)
    assert result.returncode == 1
    assert f"the candidate at {cand} serves '{FP8}', 'Qwen/Qwen3-8B-AWQ', and would be sent the log's '{BASE}': " \
           "give --candidate-model" in result.stderr
    assert not (tmp_path / "out").exists()                   # nothing was started
    # a model named on the command line that the side does not serve: the name given is what is wrong
    result = replay(log, tmp_path / "out", base, cand, "--candidate-model", "Qwen/Qwen3-8B-fp8")
    assert result.returncode == 1 and (f"--candidate-model 'Qwen/Qwen3-8B-fp8' is not served by the candidate at "
                                       f"{cand}, which serves '{FP8}', 'Qwen/Qwen3-8B-AWQ': give --candidate-model "
                                       f"'{FP8}' or another of them") in result.stderr, result.stderr
    result = replay(log, tmp_path / "out", base, cand, "--candidate-model", FP8)
    assert result.returncode == 0, result.stderr


def test_a_side_that_does_not_answer_or_refuses_the_key(start_simulator: Callable[..., str], tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,), api_keys=("right-key",))
    down = f"http://127.0.0.1:{free_port()}"
    log = write_log(tmp_path)
    result = replay(log, tmp_path / "out", base, down, "--api-key", "right-key")
    assert result.returncode == 1
    assert f"the candidate at {down} does not answer" in result.stderr and "Traceback" not in result.stderr
    result = replay(log, tmp_path / "out", base, base, "--api-key", "wrong-key")
    assert result.returncode == 1
    assert "refused the API key (HTTP 401 on /v1/models)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_run_records_versions_and_labels_and_redacts_what_it_stores(start_simulator: Callable[..., str],
                                                                         tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8,))
    versions = {side: httpx.get(url + "/version").json()["version"] for side, url in
                (("baseline", base), ("candidate", cand))}
    out = tmp_path / "out"
    result = replay(write_log(tmp_path), out, base, cand, "--label", "gpu=H100", "--label", "batch_invariant=1",
                    "--redact", r"topic \d")
    assert result.returncode == 0, result.stderr
    assert "note: no --replica, so no noise floor" in result.stderr
    store = Store.open(out)
    run = store.latest_run()
    assert run is not None
    assert run.settings["labels"] == {"gpu": "H100", "batch_invariant": "1"}
    assert run.settings["versions"] == versions
    pairs = list(store.pairs(run.id))
    assert [p["prompt"] for p in pairs] == ["Explain [REDACTED]."] * 4          # stored redacted...
    assert all(p["request"]["messages"][0]["content"] == "Explain [REDACTED]." for p in pairs)
    store.close()
    # ...and sent as logged: the answers are those of a run without --redact
    assert replay(write_log(tmp_path), tmp_path / "plain", base, cand).returncode == 0
    plain = Store.open(tmp_path / "plain")
    plain_run = plain.latest_run()
    assert plain_run is not None
    assert [p.answers[Side.BASELINE].text for p in plain.pairs(plain_run.id)] == \
        [p.answers[Side.BASELINE].text for p in pairs]
    plain.close()
    md = (out / "report.md").read_text()
    assert "`gpu=H100`, `batch_invariant=1`" in md and f"posing as vLLM {versions['candidate']}`" in md
    for args, message in ((["--label", "gpu"], "--label expects KEY=VALUE"),
                          (["--redact", "(unclosed"], "is not a valid regular expression")):
        result = replay(write_log(tmp_path), tmp_path / "bad", base, cand, *args)
        assert result.returncode == 1 and message in result.stderr, result.stderr


def test_a_password_in_a_sides_url_is_sent_and_never_stored_shown_or_reported(start_simulator: Callable[..., str],
                                                                                tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8,))
    with_password = cand.replace("http://", "http://alice:hunter2secret@")
    out = tmp_path / "out"
    result = replay(write_log(tmp_path), out, base, with_password, "--no-score")
    assert result.returncode == 0, result.stderr
    assert "hunter2secret" not in result.stdout + result.stderr
    store = Store.open(out)
    run = store.latest_run()
    assert run is not None and run.settings["sides"]["candidate"]["url"] == cand
    store.close()
    for written in out.iterdir():
        if written.is_file():
            assert b"hunter2secret" not in written.read_bytes(), written.name
    down = f"http://alice:hunter2secret@127.0.0.1:{free_port()}"
    refused = replay(write_log(tmp_path), tmp_path / "down", base, down)
    assert refused.returncode == 1 and "does not answer" in refused.stderr
    assert "hunter2secret" not in refused.stderr


async def _drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Any request: a head, then its body a byte every 0.2 s (each read well within any read timeout)."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        writer.write(b" ")
        await writer.drain()
        await asyncio.sleep(0.2)


def test_a_side_that_drips_its_model_list_stops_the_run_within_the_preflights_timeout(tmp_path: Path) -> None:
    from shadowdiff.answers.client import Upstream
    from shadowdiff.errors import ConfigError
    from shadowdiff.replay import logs
    from shadowdiff.replay.preflight import check_sides
    from tests.support.rawupstream import raw_server
    from tests.support.replaying import replay_settings

    with raw_server(_drip) as dripping:
        settings = replay_settings(write_log(tmp_path), {Side.BASELINE: dripping, Side.CANDIDATE: dripping})
        settings = replace(settings, candidate=Upstream(Side.CANDIDATE, dripping, FP8))
        with pytest.raises(ConfigError, match=r"does not answer \(/v1/models not whole within 1 s\)"):
            check_sides(settings, logs.LogFormat.BODIES, warn=lambda _: None, timeout=1.0)


def test_an_address_without_its_scheme_or_of_one_route_is_refused_before_any_request(
        start_simulator: Callable[..., str], tmp_path: Path) -> None:
    """Caught by preflight, not by a run of 404s: what to give instead is said."""
    base = start_simulator(served_model_names=(BASE,))
    port = base.rsplit(":", 1)[1]
    log = write_log(tmp_path)
    for candidate, said in (
            (f"127.0.0.1:{port}", f"--candidate '127.0.0.1:{port}' has no scheme: give http://127.0.0.1:{port}"),
            (f"localhost:{port}", f"--candidate 'localhost:{port}' has no scheme: give http://localhost:{port}"),
            (f"{base}/v1/chat/completions", f"--candidate '{base}/v1/chat/completions' is the URL of one route "
                                            f"(/v1/chat/completions): give the server's base URL, {base} -"),
            (f"http://user:secret@127.0.0.1:{port}/v1/completions", f"give the server's base URL, "
                                                                    f"http://127.0.0.1:{port} -"),
            (f"{base}/v1?api-version=2", f"a base URL has no query, fragment or spaces: give {base}/v1")):
        result = replay(log, tmp_path / "out", base, candidate)
        assert result.returncode == 1 and said in result.stderr, result.stderr
        assert "secret" not in result.stderr and not (tmp_path / "out").exists()
    result = replay(log, tmp_path / "out", base, f"{base}/v1", "--candidate-model", BASE, "--allow-same-target")
    assert result.returncode == 0, result.stderr   # (a base URL with /v1, as OpenAI clients take it: fine)
