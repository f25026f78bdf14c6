"""Hostile text through ``replay`` and ``compare`` into their reports, as users run them.

The log (ids, categories, prompts), the labels on the command line, the candidate's
answers and its error bodies all carry markup; none of it may be live in
report.html, and report.md must hold together under a CommonMark parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support import cli
from tests.support.reporting import FENCED, HOSTILE, IMG, SCRIPT, assert_nothing_live, commonmark
from tests.support.servers import read_body, serve_app


def hostile_upstream() -> Any:
    """An OpenAI-compatible server whose answers and error bodies are markup: every
    prompt that mentions "fail" gets a 400 whose body is HOSTILE, the rest a streamed
    answer quoting HOSTILE and FENCED."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = json.loads(await read_body(receive) or b"{}")
        if "fail" in json.dumps(body):
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"text/html")]})
            await send({"type": "http.response.body", "body": HOSTILE.encode()})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for piece in (HOSTILE, "\n", FENCED):
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(),
                        "more_body": True})
        end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
               "choices": [{"index": 0, "delta": {}, "finish_reason": f"stop{IMG}"}]}
        await send({"type": "http.response.body", "body": f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()})

    return app


@pytest.fixture(scope="module")
def sides() -> Iterator[tuple[str, str]]:
    with serve_app(build_app(SimulatorSettings(served_model_names=("Qwen/Qwen3-8B",)))) as base, \
            serve_app(hostile_upstream()) as cand:
        yield base, cand


def shadowdiff(*args: str) -> cli.Ran:
    return cli.shadowdiff(*args)


def check_reports(out: Path, *shown: str) -> None:
    html = (out / "report.html").read_text(encoding="utf-8")
    assert_nothing_live(html, *shown)
    tokens = commonmark((out / "report.md").read_text(encoding="utf-8"))
    assert [t for t in tokens if t.type == "html_block"] == []
    assert [c for t in tokens if t.type == "inline" for c in t.children or () if c.type == "html_inline"] == []


def test_replay_of_a_hostile_log_against_a_hostile_candidate(sides: tuple[str, str], tmp_path: Path) -> None:
    base, cand = sides
    log = tmp_path / "log.jsonl"
    rows = [{"id": f"{IMG}{i}", "category": f"{SCRIPT}|{i % 2}",
             "messages": [{"role": "user", "content": f"{HOSTILE} question {i}" + (" fail" if i == 2 else "")}]}
            for i in range(4)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json " + SCRIPT + "\n")
    out = tmp_path / "out"
    result = shadowdiff("replay", str(log), "--baseline", base, "--candidate", cand, "--out", str(out),
                        "--label", f"team={SCRIPT}", "--max-tokens", "24")
    assert result.returncode == 0, result.stderr
    rows_out = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert {r["outcome"] for r in rows_out} >= {"error", "divergent"}
    assert any(HOSTILE in (r["answers"]["candidate"]["error"] or "") for r in rows_out)
    check_reports(out, f"{IMG}0", f"{SCRIPT}|1", HOSTILE, "team=" + SCRIPT, f"HTTP 400: {HOSTILE}")


def test_compare_of_hostile_answer_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"id": f"{SCRIPT}{i}", "text": f"answer {i}"}) + "\n" for i in range(3)))
    b.write_text("".join(json.dumps({"id": f"{SCRIPT}{i}", "text": f"{HOSTILE}\n{FENCED}"}) + "\n"
                         for i in range(3)))
    out = tmp_path / "out"
    result = shadowdiff("compare", str(a), str(b), "--out", str(out))
    assert result.returncode == 0, result.stderr
    check_reports(out, f"{SCRIPT}0", HOSTILE)
    md = (out / "report.md").read_text(encoding="utf-8")
    headings = [t for t in commonmark(md) if t.type == "heading_open" and t.tag == "h3"]
    assert len(headings) == 3
