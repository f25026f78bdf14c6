"""Prompt logs as tables (CSV, TSV), and the formats that are refused by name (YAML, Parquet)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shadowdiff.errors import InputError
from shadowdiff.replay import logs
from shadowdiff.replay.logs import BadLine, LogFormat, LogRecord
from tests.support import cli


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_and_tsv_logs_are_tables(tmp_path: Path) -> None:
    csv_log = _write(tmp_path / "prompts.csv", 'id,category,prompt,reference\n'
                                               'q1,math,"What is 6 times 7?",42\n'
                                               'q2,writing,"Write two lines,\nthen stop.",\n'
                                               '\n'
                                               'q3,stem,,\n'
                                               'q4,stem,"extra",1,2\n')
    assert logs.detect(csv_log) is LogFormat.CSV and logs.count(csv_log) == 4
    read = list(logs.read(csv_log))
    first, second = (r for r in read if isinstance(r, LogRecord))
    assert (first.key, first.category, first.reference) == ("q1", "math", "42")
    assert first.body == {"messages": [{"role": "user", "content": "What is 6 times 7?"}]}
    assert second.body["messages"][0]["content"] == "Write two lines,\nthen stop." and second.reference is None
    bad = [r for r in read if isinstance(r, BadLine)]
    assert [b.reason for b in bad] == ["the prompt column is empty", "5 fields, the header has 4"]
    # a TSV without a .tsv name: its header names a prompt column; on the completions route, a prompt
    tsv = _write(tmp_path / "prompts.txt", "question\tmodel\nHow far is the moon?\tQwen/Qwen3-8B\n")
    assert logs.detect(tsv) is LogFormat.CSV
    [record] = logs.read(tsv, endpoint=logs.COMPLETIONS)
    assert isinstance(record, LogRecord)
    assert record.body == {"prompt": "How far is the moon?", "model": "Qwen/Qwen3-8B"} and record.key == "line-2"
    # text with commas is still text, even when its first line opens with a column's name
    text = _write(tmp_path / "plain.txt", "Hello, world.\nAnother, prompt.\n")
    assert logs.detect(text) is LogFormat.TEXT
    prose = _write(tmp_path / "prose.txt", "Question, what is the capital of France?\nExplain tides.\nHello, world\n")
    assert logs.detect(prose) is LogFormat.TEXT and len(list(logs.read(prose))) == 3
    # text whose lines open with a word and a colon is text, not YAML: no line is indented under a key
    keyed = _write(tmp_path / "keyed", "Summary: explain tides.\nTranslate: hello\nNote: be brief.\n")
    assert logs.detect(keyed) is LogFormat.TEXT
    # ... and so are indented lines and lists under a first line that is no key
    code = _write(tmp_path / "code", "Fix this code: print(x)\nExplain tides.\n- a list item\n    indented\n")
    assert logs.detect(code) is LogFormat.TEXT
    # a YAML-looking log read as text when named so
    assert len(list(logs.read(_write(tmp_path / "named", "prompts:\n  - hello\n"), LogFormat.TEXT))) == 2
    # a table whose first line is blank: its header is its first line of cells
    blank = _write(tmp_path / "blank.csv", "\nprompt,id\nhello,1\n")
    [row] = logs.read(blank)
    assert isinstance(row, LogRecord) and row.key == "1"


@pytest.mark.parametrize(("name", "content", "said"), [
    ("prompts.csv", "id,body\n1,hello\n",
     r"names no prompt column \(it has: id, body\): its first line must be a header that names one prompt"),
    ("prompts.yaml", "- prompt: hello\n", "is YAML, which is not read"),
    ("prompts.txt", "---\n- prompt: hello\n", "is YAML, which is not read"),
    ("prompts", "- messages:\n  - role: user\n    content: hello\n", "looks like YAML .*, which is not read"),
    ("prompts", "prompts:\n  - prompt: hello\n", "looks like YAML .*, which is not read"),
    ("prompts.txt", "prompts:\n  - What is 2+2?\n  - Name a color.\n", "looks like YAML .*, which is not read"),
    ("prompts.jsonl", "prompt: |\n  What is 2+2?\n", "looks like YAML .*, which is not read"),
    ("prompts", "- prompt: one\n- prompt: two\n", "looks like YAML .*, which is not read"),
    ("prompts", "# my prompts\nprompts:\n  - prompt: hello\n", "looks like YAML .*, which is not read"),
    ("prompts", '"prompt": one\n"more":\n  - two\n', "looks like YAML .*, which is not read"),
    ("prompts", "questions:\n- What is 2+2?\n", r"looks like YAML \('questions:' then '- What is 2\+2\?'\)"),
    ("prompts.parquet", "PAR1\x00\x00rest", "is Parquet, which is not read"),
])
def test_a_table_without_a_prompt_column_yaml_and_parquet_are_refused_by_name(tmp_path: Path, name: str,
                                                                               content: str, said: str) -> None:
    log = _write(tmp_path / name, content)
    with pytest.raises(InputError, match=said):
        list(logs.read(log))


def test_replay_of_a_csv_sends_no_header_and_says_how_it_read_the_log(start_simulator: Callable[..., str],
                                                                     tmp_path: Path) -> None:
    base = start_simulator(served_model_names=("Qwen/Qwen3-8B",))
    cand = start_simulator(served_model_names=("Qwen/Qwen3-8B-FP8",))
    log = _write(tmp_path / "prompts.csv", "prompt\n" + "".join(f'"Say something, about {i}."\n' for i in range(3)))
    out = tmp_path / "out"
    ran = cli.shadowdiff("replay", log, "--baseline", base, "--candidate", cand, "--out", out, "--max-tokens", "8")
    assert ran.returncode == 0, ran.stderr
    assert (f"{log}: read as a table (CSV or TSV) whose header names a prompt column (detected; --format to "
            "choose another)") in ran.stderr
    # (against the simulator, every report says so first)
    simulated = "SIMULATED: the baseline and the candidate are `shadowdiff simulate`, a test double"
    assert ran.stdout.startswith(simulated) and simulated in (out / "report.md").read_text()
    assert simulated in (out / "report.html").read_text().replace("<code>", "`").replace("</code>", "`")
    assert "shadowdiff simulate (a test double), posing as vLLM 0.34.0" in (out / "report.md").read_text()
    from shadowdiff.store import Store

    store = Store.open(out)
    try:
        run = store.latest_run()
        assert run is not None
        assert sorted(p["prompt"] for p in store.pairs(run.id)) == [f"Say something, about {i}." for i in range(3)]
    finally:
        store.close()


@pytest.mark.parametrize(("text", "said"), [
    ("id;prompt\n1;What is 2+2?\n", "its cells seem split by ';', and a table's are split by ',' (.csv) or a tab"),
    ("prompt\n", "has a header and no row under it: there is nothing to replay"),
    ("1,What is 2+2?,math\n", "its first line must be a header that names one prompt or question or input"),
], ids=["semicolons", "a header alone", "no header"])
def test_a_table_that_cannot_be_read_says_why_before_any_request(text: str, said: str, tmp_path: Path) -> None:
    log = tmp_path / "prompts.csv"
    log.write_text(text)
    result = cli.shadowdiff("replay", log, "--baseline", "http://127.0.0.1:9", "--candidate", "http://127.0.0.1:9",
                           "--out", tmp_path / "out")
    assert result.returncode == 1 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
