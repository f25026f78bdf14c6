"""Gradable questions on the simulator: right at the configured accuracy, flipped by the
number drift at its rate, never changed in value by other drift or by a replica; over
HTTP on loopback, graded by the test's own reading of the ``Answer: <value>`` line.

Tolerances. Whether a question is right, and which prompts a profile drifts, come from
a hash of the prompt, so each count below is fixed for the committed workload; what
the tolerance checks is that the hash picks the share it should, as independent coin
flips would. For N prompts each chosen with probability p the count has standard
deviation sqrt(N p (1 - p)); a bound of 4 of them is left by honest coin flips about
once in 16,000 times (normal approximation), so a count outside it means the share is
wrong, not bad luck.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shadowdiff.errors import ConfigError
from shadowdiff.simulator import arithmetic, graded, profiles, questions
from shadowdiff.simulator.baseline_text import prompt_key
from shadowdiff.simulator.cli import simulate
from shadowdiff.simulator.drift import first_difference, planned_kind
from shadowdiff.simulator.gradable import number_text
from shadowdiff.simulator.profiles import DriftKind
from shadowdiff.simulator.prompts import render_chat
from shadowdiff.simulator.sampling import Generator
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.vocab import vocabulary
from tests.support.fixtures import MODEL
from tests.support.servers import shadowdiff_process
from tests.support.simulating import PROMPTS, chunks, post

WORKLOAD = Path(str(resources.files("shadowdiff.replay") / "workloads" / "gradable.jsonl"))
ROWS = [json.loads(line) for line in WORKLOAD.read_text().splitlines()]
DEMO = [json.loads(line)["messages"][0]["content"]
        for line in (WORKLOAD.parent / "demo.jsonl").read_text().splitlines()]
CHAT = "/v1/chat/completions"
_ANSWER = re.compile(r"\n\nAnswer: (\S+)\Z")


def value(content: str) -> str | None:
    match = _ANSWER.search(content)
    return None if match is None else match.group(1)


def right(row: dict[str, Any], said: str | None) -> bool:
    if said is None:
        return False
    if row["grader"] == "number":
        return Fraction(said) == Fraction(row["reference"])
    return said == str(row["reference"])


def contents(url: str, rows: list[dict[str, Any]] = ROWS) -> list[str]:
    def ask(row: dict[str, Any]) -> str:
        r = post(url, CHAT, {"model": MODEL, "messages": row["messages"], "max_tokens": row["max_tokens"],
                             "temperature": 0})
        assert r.status_code == 200, r.text
        return str(r.json()["choices"][0]["message"]["content"])

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(ask, rows))


def within(count: int, n: int, p: float) -> bool:
    """``count`` is within 4 standard deviations of Binomial(n, p)'s mean (module docstring)."""
    return abs(count - n * p) <= 4 * math.sqrt(n * p * (1 - p))


def planned_number(profile: profiles.Profile) -> list[bool]:
    """For each workload prompt, whether ``profile`` plans a flipped fact for it."""
    return [planned_kind(profile, prompt_key(render_chat(row["messages"]))) is DriftKind.NUMBER for row in ROWS]


# --- reading the questions ------------------------------------------------------------------

@pytest.mark.parametrize(("prompt", "answer"), [
    ("What is 17 + 25?", "42"), ("what's 6*7", "42"), ("Calculate (3 + 4) * 5.", "35"), ("Compute 100 - 58.", "42"),
    ("What is 84 ÷ 2?", "42"), ("What is 2 + 3 * 4 - 10 / 5?", "12"), ("Evaluate 5 - 8", "-3"),
])
def test_plain_arithmetic_questions_are_gradable(prompt: str, answer: str) -> None:
    solution = questions.solve(prompt)
    assert solution is not None and solution.answer == answer and solution.kind == "arithmetic"


@pytest.mark.parametrize("prompt", [
    "What is 7 / 2?",                                   # a remainder: no exact integer answer
    "What is 42?", "What is -5 + 3?", "What is 2 ** 8?", "What is (2 + 3?",
    "What is " + "(" * 500 + "1 + 1" + ")" * 500 + "?",  # too long to be a question (and to recurse over)
    "Calculate 17 x 23 and show each step.",            # the demo's: more than a question
    "What is 15 percent of 80? Solve it step by step.",
    "On which day of the week does February 30, 2024 fall? End your reply with 'Answer: <weekday>'.",
    "Convert 3 hours to meters. End your reply with 'Answer: <number>'.",
    "Convert 1 minutes to hours. End your reply with 'Answer: <number>'.",   # 1/60: no exact decimal
])
def test_questions_without_one_exact_answer_are_not_gradable(prompt: str) -> None:
    assert questions.solve(prompt) is None


def test_ordinary_prompts_are_not_gradable() -> None:
    assert [p for p in DEMO + PROMPTS if questions.solve(p) is not None] == []


def test_arithmetic_is_worked_out_in_steps_with_precedence() -> None:
    assert arithmetic.evaluate("(17 + 25) * 3 - 8") == (118, ["17 + 25 = 42", "42 * 3 = 126", "126 - 8 = 118"])
    assert arithmetic.evaluate("2 + 3 * 4") == (14, ["3 * 4 = 12", "2 + 12 = 14"])
    assert arithmetic.evaluate("10 - 4 - 3") == (3, ["10 - 4 = 6", "6 - 3 = 3"])
    assert arithmetic.evaluate("1 / 0") is None and arithmetic.evaluate("2 3") is None


def test_numbers_are_written_exactly_or_not_at_all() -> None:
    assert [number_text(Fraction(x)) for x in ("2500", "0.75", "-3", "12.50", "0")] == ["2500", "0.75", "-3", "12.5",
                                                                                          "0"]
    assert number_text(Fraction(1, 3)) is None and number_text(Fraction(7, 60)) is None


def test_every_question_has_plausible_wrong_values() -> None:
    for row in ROWS:
        solution = questions.solve(row["messages"][0]["content"])
        assert solution is not None
        wrong = graded.wrong_values(solution)
        assert len(wrong) >= 3 and solution.answer not in wrong
        assert all(questions.solve(row["messages"][0]["content"]) == solution for _ in range(2))


EDGES = ["What is 0 + 0?", "Evaluate 5 - 8", "What is 84 ÷ 2?",
         "What is the date 1 days after December 30, 9999? End your reply with 'Answer: <YYYY-MM-DD>'.",
         "Convert 0.001 meters to millimeters. End your reply with 'Answer: <number>'."]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_questions_at_the_edges_get_wrong_and_flipped_answers_too(start_simulator: Callable[..., str],
                                                                  path: str) -> None:
    """Right, wrong, and wrong then flipped (a zero, a negative answer, the calendar's last
    day), by chat and by completions."""
    flipping = profiles.builtin("baseline").with_rates({DriftKind.NUMBER: 1.0})
    servers = [start_simulator(accuracy=1.0), start_simulator(accuracy=0.0),
               start_simulator(accuracy=0.0, profile=flipping)]
    for prompt in EDGES:
        solution = questions.solve(prompt)
        assert solution is not None
        body: dict[str, Any] = {"model": MODEL, "temperature": 0, "max_tokens": 200}
        body.update({"messages": [{"role": "user", "content": prompt}]} if path == CHAT else {"prompt": prompt})
        said = []
        for url in servers:
            r = post(url, path, body)
            assert r.status_code == 200, r.text
            choice = r.json()["choices"][0]
            said.append(value(choice["message"]["content"] if path == CHAT else choice["text"]))
        right_one, wrong, flipped = said
        assert right_one == solution.answer
        assert wrong in graded.wrong_values(solution) and flipped != wrong
        assert flipped == solution.answer or flipped in graded.wrong_values(solution)


# --- the baseline's accuracy ----------------------------------------------------------------

def test_the_baseline_is_right_at_its_accuracy(start_simulator: Callable[..., str]) -> None:
    graded_at = {}
    for accuracy in (0.9, 0.6):
        answers = contents(start_simulator(accuracy=accuracy))
        assert all(value(a) is not None for a in answers)
        graded_at[accuracy] = [right(row, value(a)) for row, a in zip(ROWS, answers, strict=True)]
        assert within(sum(graded_at[accuracy]), len(ROWS), accuracy), (accuracy, sum(graded_at[accuracy]))
    # raising the accuracy only turns wrong answers right
    assert all(high for low, high in zip(graded_at[0.6], graded_at[0.9], strict=True) if low)
    # every kind has wrong answers to show at 0.6
    assert {row["category"] for row, ok in zip(ROWS, graded_at[0.6], strict=True) if not ok} == {
        "arithmetic", "dates", "units", "counting", "choice"}


def test_the_accuracy_flag_reaches_the_server() -> None:
    rows = ROWS[:25]
    for accuracy, expected in (("1", True), ("0", False)):
        with shadowdiff_process("simulate", "--served-model-name", MODEL, "--accuracy", accuracy) as (_, url):
            assert [right(row, value(a)) for row, a in zip(rows, contents(url, rows), strict=True)] == \
                [expected] * len(rows)
    result = CliRunner().invoke(simulate, ["--accuracy", "1.5"])
    assert result.exit_code == 2 and "--accuracy" in result.output
    assert "--accuracy" in CliRunner().invoke(simulate, ["--help"]).output
    with pytest.raises(ConfigError, match="accuracy"):
        SimulatorSettings(accuracy=-0.1)


# --- flipped facts ------------------------------------------------------------------------

def test_the_number_drift_flips_answers_and_nothing_else_changes_a_value(
        start_simulator: Callable[..., str]) -> None:
    fp8 = profiles.builtin("fp8")
    base = contents(start_simulator(accuracy=0.9))
    cand = contents(start_simulator(profile=fp8, accuracy=0.9))
    was = [right(row, value(a)) for row, a in zip(ROWS, base, strict=True)]
    now = [right(row, value(a)) for row, a in zip(ROWS, cand, strict=True)]
    changed = [value(a) != value(b) for a, b in zip(base, cand, strict=True)]
    # exactly the prompts the profile picks for a flipped fact change their value ...
    assert changed == planned_number(fp8)
    # ... while the other drift kinds changed the words of many more
    assert sum(a != b for a, b in zip(base, cand, strict=True)) > 3 * sum(changed)
    correct_to_wrong = sum(w and not n for w, n in zip(was, now, strict=True))
    wrong_to_correct = sum(n and not w for w, n in zip(was, now, strict=True))
    assert correct_to_wrong == sum(c and w for c, w in zip(changed, was, strict=True))   # every right one flipped
    # 300 prompts x number rate 4 % x accuracy 90 %: about 11, with a standard deviation of 3.2
    assert correct_to_wrong >= 1 and within(correct_to_wrong, len(ROWS), fp8.rate(DriftKind.NUMBER) * 0.9)
    assert wrong_to_correct <= sum(c and not w for c, w in zip(changed, was, strict=True))


def test_a_flipped_wrong_answer_is_sometimes_right(start_simulator: Callable[..., str]) -> None:
    """Too few baseline mistakes are flipped at fp8's rate to see the recovery rate, so a
    profile flipping half the prompts at accuracy 0.5 shows it."""
    flipping = profiles.builtin("baseline").with_rates({DriftKind.NUMBER: 0.5})
    base = contents(start_simulator(accuracy=0.5))
    cand = contents(start_simulator(profile=flipping, accuracy=0.5))
    was = [right(row, value(a)) for row, a in zip(ROWS, base, strict=True)]
    now = [right(row, value(a)) for row, a in zip(ROWS, cand, strict=True)]
    flipped_wrong = [c and not w for c, w in zip(planned_number(flipping), was, strict=True)]
    recovered = sum(n and not w for n, w in zip(now, was, strict=True))
    assert recovered == sum(f and n for f, n in zip(flipped_wrong, now, strict=True))   # only flips recover
    assert recovered >= 1 and within(recovered, sum(flipped_wrong), graded.RECOVERY), (recovered, sum(flipped_wrong))


def test_a_replica_never_changes_a_value(start_simulator: Callable[..., str]) -> None:
    base = contents(start_simulator())
    for rate in (None, 1.0):    # the default share of near-tie flips, and every prompt
        profile = profiles.builtin("baseline")
        replica = contents(start_simulator(seed=7, profile=profile if rate is None else
                                           profiles.Profile("baseline", replica_rate=rate)))
        assert [value(a) for a in replica] == [value(a) for a in base]
        if rate == 1.0:
            assert sum(a != b for a, b in zip(base, replica, strict=True)) > len(ROWS) // 4


def test_streams_usage_and_logprobs_follow_the_answer(start_simulator: Callable[..., str]) -> None:
    heavy = profiles.builtin("fp8-heavy")
    baseline, candidate = start_simulator(), start_simulator(profile=heavy)
    vocab, seen = vocabulary(), {"number": 0, "wording": 0}
    for row in ROWS[:60]:
        body = {"model": MODEL, "messages": row["messages"], "temperature": 0, "logprobs": True, "top_logprobs": 2}
        whole = post(candidate, CHAT, body).json()
        choice = whole["choices"][0]
        streamed = chunks(post(candidate, CHAT, {**body, "stream": True,
                                                  "stream_options": {"include_usage": True}}).content)
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in streamed if c["choices"]) == \
            choice["message"]["content"]
        usage = whole["usage"]
        assert {k: streamed[-1]["usage"][k] for k in ("prompt_tokens", "completion_tokens")} == \
            {k: usage[k] for k in ("prompt_tokens", "completion_tokens")}
        # one logprob a generated token, the end of sequence included, as in vLLM
        assert len(choice["logprobs"]["content"]) == usage["completion_tokens"] == \
            len(vocab.encode(choice["message"]["content"])) + 1
        kind = Generator(heavy, 0, vocab).plan(render_chat(row["messages"])).kind
        if kind not in (DriftKind.NUMBER, DriftKind.WORDING):
            continue
        base = post(baseline, CHAT, body).json()["choices"][0]["logprobs"]["content"]
        at = first_difference(vocab.encode("".join(e["token"] for e in base)),
                              vocab.encode("".join(e["token"] for e in choice["logprobs"]["content"])))
        assert at is not None
        top = base[at]["top_logprobs"]
        margin = top[0]["logprob"] - top[1]["logprob"]
        # a flipped fact is a confident change; wording starts where the baseline was unsure
        assert margin > 1.0 if kind is DriftKind.NUMBER else margin < 0.3, (kind, margin)
        seen[kind.value] += 1
    assert seen["number"] >= 3 and seen["wording"] >= 3, seen


# --- everything else as before ------------------------------------------------------------

# sha256 over the answers (thinking off and on) to the demo workload and test_behaviour's
# PROMPTS, taken before gradable questions existed: none of them is gradable, so none may
# change by a byte. A deliberate change to the synthetic text updates these.
BEFORE = {
    ("baseline", 0): "8ed55b6d5d010e7020fdd6f27fe8cf414c0388407dcf68624b84132fdd20c051",
    ("fp8", 0): "5bb3a910e7c66ff75c40a1143a73d378c15b333668cdba739ade29479c4d87a9",
    ("fp8-heavy", 0): "f5d13f10f7d28f5ead4d8728a0488623bd251860bb5a678c391e808c48853c14",
    ("baseline", 1): "9d087b9d0d5977946848d2940a7b119383ecf45a8b109be21d50ec9a8fc008c3",
}


@pytest.mark.parametrize(("profile", "seed"), list(BEFORE))
def test_other_prompts_are_answered_as_before(profile: str, seed: int) -> None:
    generator = Generator(profiles.builtin(profile), seed, vocabulary(), accuracy=0.3)
    digest = hashlib.sha256()
    for prompt in DEMO + PROMPTS:
        for think in (False, True):
            plan = generator.plan(render_chat([{"role": "user", "content": prompt}]), think=think)
            digest.update("".join(t.text for t in plan.tokens).encode() + b"\0")
    assert digest.hexdigest() == BEFORE[(profile, seed)]


def test_the_accuracy_changes_no_other_answer(start_simulator: Callable[..., str]) -> None:
    rows = [{"messages": [{"role": "user", "content": p}], "max_tokens": 256} for p in DEMO]
    assert contents(start_simulator(accuracy=0.0), rows) == contents(start_simulator(accuracy=1.0), rows)
