"""Control, escape and bidi characters from servers, models and logs, through every sink people read.

A candidate whose answers, reasoning, error bodies, model name and version carry a
terminal's ESC and CR, a BEL, a C1 CSI and a right-to-left override; a log whose ids,
categories and prompts carry them too. None may reach a terminal (the commands' stdout
and stderr, the serve log) or a report (report.md, report.html, pairs.csv, the JSON
files) raw: each is shown as its escape (``\\u202e``) or, in report.html's texts, as a box
naming its code point.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.store.review import ReviewQueue
from tests.support import cli
from tests.support.reviewing import pair_ids
from tests.support.servers import read_body, serve_app

# a line that rewrites itself on a terminal, a number shown backwards, a bell, an 8-bit CSI
PIECES = ("\x1b[2K\rverdict: PASS", "\u202e24\u202c", "\x07", "\x9b")
HOSTILE = "total " + " | ".join(PIECES) + " units"
# each piece as it is shown instead
SHOWN = ("\\x1b[2K\\rverdict: PASS", "\\u202e24\\u202c", "\\x07", "\\x9b")
RAW = ("\x1b", "\r", "\x07", "\x9b", "\u202e", "\u202c")


def raw_in(text: str) -> list[str]:
    """The raw hostile characters in ``text``."""
    return [ch for ch in RAW if ch in text]


def terminal(ran: cli.Ran) -> str:
    """What a command wrote, less the progress bar's own CRs (each redraw starts with one,
    and a line printed beside it first clears the bar's: CR, spaces, CR)."""
    return ran.stdout + re.sub(r"\r *\r|\r(?=[\w: ]*\d+%\|)", "", ran.stderr)


def hostile_upstream(fail_all: bool = False) -> Any:
    """A vLLM-like server whose model name, version, streamed answer and reasoning, and
    error bodies (for prompts that say "fail", or all with ``fail_all``) are HOSTILE."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)

        async def reply(status: int, payload: bytes, kind: bytes = b"application/json") -> None:
            await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
            await send({"type": "http.response.body", "body": payload})

        if scope["path"] == "/v1/models":
            return await reply(200, json.dumps({"data": [{"id": f"model {HOSTILE}"}]}).encode())
        if scope["path"] == "/version":
            return await reply(200, json.dumps({"version": f"0.1 {HOSTILE}"}).encode())
        if fail_all or b"fail" in body:
            return await reply(400, HOSTILE.encode(), b"text/plain")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for delta in ({"reasoning_content": HOSTILE}, {"content": HOSTILE}):
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(),
                        "more_body": True})
        end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await send({"type": "http.response.body", "body": f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()})

    return app


def hostile_log(path: Path, lines: int = 4) -> Path:
    rows = [{"id": f"id {i} {HOSTILE}", "category": f"cat {HOSTILE}",
             "messages": [{"role": "user", "content": f"question {i}: {HOSTILE}" + (" fail" if i == 2 else "")}]}
            for i in range(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def baseline() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=("Qwen/Qwen3-8B",)))) as url:
        yield url


@pytest.fixture(scope="module")
def replayed(baseline: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[cli.Ran, Path]:
    tmp = tmp_path_factory.mktemp("hostile")
    with serve_app(hostile_upstream()) as cand:
        out = tmp / "out"
        ran = cli.shadowdiff("replay", hostile_log(tmp / "log.jsonl"), "--baseline", baseline, "--candidate", cand,
                             "--out", out, "--max-tokens", "24")
    assert ran.returncode == 0, ran.stderr
    return ran, out


def test_replay_writes_no_raw_control_character_to_the_terminal(replayed: tuple[cli.Ran, Path]) -> None:
    ran, _ = replayed
    assert raw_in(terminal(ran)) == []


def test_report_md_shows_them_as_escapes(replayed: tuple[cli.Ran, Path]) -> None:
    md = (replayed[1] / "report.md").read_text(encoding="utf-8")
    assert raw_in(md) == []
    for shown in SHOWN:                 # the answer, its reasoning, the error body, the key, the version
        assert md.count(shown) >= 5, shown
    assert "model total" in md          # the candidate's model name, in the run's table


def test_report_html_shows_them_as_boxes_or_escapes(replayed: tuple[cli.Ran, Path]) -> None:
    html = (replayed[1] / "report.html").read_text(encoding="utf-8")
    assert raw_in(html) == []
    # the prompt block and the answers: boxes; attributes, headings, the plots: escapes
    prompt = html.split('<div class="prompt">', 1)[1].split("</div>", 1)[0]
    assert '<span class="cf" title="right-to-left override">U+202E</span>24' in prompt
    assert '<span class="cf" title="a control character">U+001B</span>' in prompt
    assert f'data-key="id 0 total {SHOWN[0]}' in html
    assert f"cat total {SHOWN[0]}" in html.split('<h2 id="run">', 1)[0]   # the category plot's labels


def test_pairs_csv_shows_them_as_escapes_and_runs_no_formula(replayed: tuple[cli.Ran, Path]) -> None:
    data = (replayed[1] / "pairs.csv").read_bytes().decode("utf-8")
    assert raw_in(data.replace("\r\n", "\n")) == []    # (CSV's own line ends are CRLF)
    rows = list(csv.DictReader(io.StringIO(data, newline="")))
    failed = next(r for r in rows if r["candidate_error"])
    assert failed["candidate_error"] == "HTTP 400: total " + " | ".join(SHOWN) + " units"
    assert all(r["key"].startswith("id ") and SHOWN[1] in r["prompt"] for r in rows)


def test_json_files_escape_them_and_keep_the_text_exact(replayed: tuple[cli.Ran, Path]) -> None:
    out = replayed[1]
    for name in ("pairs.jsonl", "summary.json", "baseline.texts.json", "candidate.texts.json"):
        assert raw_in((out / name).read_text(encoding="utf-8")) == [], name
    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["answers"]["candidate"]["text"] for r in rows if not r["answers"]["candidate"]["error"]} == {HOSTILE}
    assert HOSTILE in json.loads((out / "candidate.texts.json").read_text(encoding="utf-8"))


def test_report_command_on_the_store(replayed: tuple[cli.Ran, Path], tmp_path: Path) -> None:
    """A reviewer's note and a log's key, quoted in the verdict's lines on stdout."""
    out = replayed[1]
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        pair_id = next(i for k, i in pair_ids(store, run.id).items() if k.startswith("id 0"))
        ReviewQueue(store).add_review(pair_id, "ana", "factual", "candidate", note=f"see {HOSTILE}")
    finally:
        store.close()
    ran = cli.shadowdiff("report", out / STORE_FILE, "--out", tmp_path / "again")
    assert raw_in(terminal(ran)) == []
    assert f"factual regression: pair id 0 total {SHOWN[0]}" in ran.stdout
    assert f"see total {SHOWN[0]}" in ran.stdout
    for name in ("report.md", "report.html", "pairs.csv", "summary.json"):
        assert raw_in((tmp_path / "again" / name).read_text(encoding="utf-8").replace("\r\n", "\n")) == [], name


def test_a_failed_candidates_first_error_line_cannot_rewrite_itself(baseline: str, tmp_path: Path) -> None:
    with serve_app(hostile_upstream(fail_all=True)) as cand:
        ran = cli.shadowdiff("replay", hostile_log(tmp_path / "log.jsonl", 2), "--baseline", baseline,
                             "--candidate", cand, "--out", tmp_path / "out", "--max-tokens", "8")
    assert ran.returncode == 1
    assert raw_in(terminal(ran)) == []
    assert f"candidate's first error: HTTP 400: total {SHOWN[0]}" in ran.stderr


def test_a_judge_whose_every_call_fails_is_quoted_as_escapes(replayed: tuple[cli.Ran, Path], tmp_path: Path) -> None:
    """The judge's error body, in its tally and in the command's error line (every
    command's error line goes through one place)."""
    with serve_app(hostile_upstream(fail_all=True)) as judge:
        ran = cli.shadowdiff("report", replayed[1] / STORE_FILE, "--out", tmp_path / "judged", "--judge", judge,
                             "--judge-model", "m")
    assert ran.returncode == 3, ran.stderr
    assert raw_in(terminal(ran)) == []
    problem = next(line for line in ran.stderr.splitlines() if line.startswith("first problem: "))
    error = next(line for line in ran.stderr.splitlines() if line.startswith("Error: "))
    assert f"HTTP 400: total {SHOWN[0]}" in problem and f"HTTP 400: total {SHOWN[0]}" in error


def test_a_skipped_lines_warning_quoting_the_log(baseline: str, tmp_path: Path) -> None:
    """The notices printed beside the progress bar quote the log."""
    log = tmp_path / "batch.jsonl"
    body = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
    log.write_text("".join(json.dumps({"custom_id": f"r{i}", "method": method, "url": "/v1/chat/completions",
                                       "body": body}) + "\n" for i, method in enumerate(("POST", HOSTILE))))
    with serve_app(hostile_upstream()) as cand:
        ran = cli.shadowdiff("replay", log, "--baseline", baseline, "--candidate", cand, "--out", tmp_path / "out")
    assert raw_in(terminal(ran)) == []
    assert f"line 2: method total {SHOWN[0]}".lower() in ran.stderr.lower()


def test_compare_of_hostile_answer_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"id": f"{HOSTILE}{i}", "text": f"answer {i}"}) + "\n" for i in range(3)))
    b.write_text("".join(json.dumps({"id": f"{HOSTILE}{i}", "text": HOSTILE}) + "\n" for i in range(3)))
    ran = cli.shadowdiff("compare", a, b, "--out", tmp_path / "out")
    assert ran.returncode == 0, ran.stderr
    assert raw_in(terminal(ran)) == []
    for name in ("report.md", "report.html", "pairs.csv", "pairs.jsonl"):
        assert raw_in((tmp_path / "out" / name).read_text(encoding="utf-8").replace("\r\n", "\n")) == [], name


def test_serve_logs_write_them_as_escapes() -> None:
    """serve's logging as uvicorn applies it (dictConfig), in a process of its own: a
    failure's text quoting a server, and a traceback's."""
    script = f"""
import logging, logging.config
from shadowdiff.proxy.server import log_config
from shadowdiff.proxy.settings import ProxySettings
logging.config.dictConfig(log_config(ProxySettings(primary="http://127.0.0.1:9"), "warning"))
log = logging.getLogger("shadowdiff.proxy")
log.warning("primary request failed: %s", {HOSTILE!r})
try:
    raise ValueError({HOSTILE!r})
except ValueError:
    log.exception("a pair could not be completed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=True)
    err = done.stderr.decode("utf-8")
    assert raw_in(err) == []
    assert f"primary request failed: total {SHOWN[0]}" in err
    assert f"ValueError: total {SHOWN[0]}" in err
