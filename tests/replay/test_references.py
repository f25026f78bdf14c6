"""Reference answers: in a log's lines (every format that has them) and in a --references
file, with the bad lines of both, and which one wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowdiff.errors import InputError
from shadowdiff.replay.logs import CHAT, BadLine, LogRecord, read
from shadowdiff.replay.references import Grading, read_references
from shadowdiff.triage.grading import Grader
from tests.support.replaying import lines, records, write

CHAT_BODY = {"messages": [{"role": "user", "content": "What is 6 * 7?"}]}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_bodies_lines_carry_a_reference_and_a_grader_that_are_not_sent(tmp_path: Path) -> None:
    path = write(tmp_path, lines(CHAT_BODY | {"id": "q1", "reference": 42},
                                 CHAT_BODY | {"id": "q2", "reference": "Paris", "grader": "regex"},
                                 CHAT_BODY | {"id": "q3"}))
    first, second, third = records(path)
    assert isinstance(first, LogRecord) and isinstance(second, LogRecord) and isinstance(third, LogRecord)
    assert (first.reference, first.grader) == (42, None)
    assert (second.reference, second.grader) == ("Paris", "regex")
    assert (third.reference, third.grader) == (None, None)
    # not OpenAI fields: a server would refuse or ignore them
    assert "reference" not in first.body and "grader" not in second.body and "id" not in first.body


def test_batch_lines_carry_them_beside_custom_id(tmp_path: Path) -> None:
    path = write(tmp_path, lines({"custom_id": "r1", "method": "POST", "url": CHAT, "body": CHAT_BODY,
                                  "reference": "B", "grader": "choice"}))
    (record,) = records(path)
    assert isinstance(record, LogRecord)
    assert (record.key, record.reference, record.grader) == ("r1", "B", "choice")
    assert record.body == CHAT_BODY


def test_questions_take_the_replayed_turns_reference(tmp_path: Path) -> None:
    """MT-Bench's question file: one reference per turn; "" where a turn has none."""
    path = write(tmp_path, lines({"question_id": 1, "turns": ["a?", "b?"], "reference": ["4", "Uncertain."]},
                                 {"question_id": 2, "turns": ["a?", "b?"], "reference": ["", "two"]},
                                 {"question_id": 3, "turns": ["a?", "b?"], "reference": "4"},
                                 {"question_id": 4, "turns": ["a?", "b?"], "reference": ["4"]}))
    assert [r.reference for r in records(path) if isinstance(r, LogRecord)] == ["4", None, "4", "4"]
    assert [r.reference for r in records(path, turn=2) if isinstance(r, LogRecord)] == [
        "Uncertain.", "two", None, None]   # a single value is turn 1's; a list too short has none


def test_mt_bench_questions_have_references_for_their_math_reasoning_and_coding() -> None:
    found = [r for r in read(EXAMPLES / "mt_bench_questions.jsonl") if isinstance(r, LogRecord)]
    assert len(found) == 80
    graded = {r.category for r in found if r.reference is not None}
    assert {"math", "reasoning", "coding"} <= graded
    by_key = {r.key: r.reference for r in found}
    assert (by_key["112"], by_key["101"], by_key["133"]) == ("12000", "You are in second place.", None)


@pytest.mark.parametrize(("extra", "reason"), [
    ({"reference": True}, "a reference is a string or a number, not bool"),
    ({"reference": {"answer": 4}}, "a reference is a string or a number, not dict"),
    ({"reference": 4, "grader": "fuzzy"}, "unknown grader 'fuzzy': one of exact, number, choice, regex"),
    ({"reference": 4, "grader": 3}, "grader is the name of a grader, not int"),
])
def test_bad_references_in_a_log_are_bad_lines(tmp_path: Path, extra: dict[str, object], reason: str) -> None:
    path = write(tmp_path, lines(CHAT_BODY | {"id": "ok"}, CHAT_BODY | extra, CHAT_BODY | {"id": "ok2"}))
    found = records(path)
    assert isinstance(found[0], LogRecord) and isinstance(found[2], LogRecord)
    assert found[1] == BadLine(2, reason)


def _record(key: str, reference: object = None, grader: str | None = None, line: int = 1) -> LogRecord:
    return LogRecord(key, line, CHAT, CHAT_BODY, reference=reference, grader=grader)  # type: ignore[arg-type]


def test_a_log_reference_gets_its_grader_and_a_bad_pattern_is_refused() -> None:
    grading = Grading(default=None)
    assert grading.resolve(_record("a", 42)).grader == "number"                  # inferred from the reference
    assert grading.resolve(_record("a", "B")).grader == "choice"
    assert grading.resolve(_record("a", "Paris")).grader == "exact"
    assert grading.resolve(_record("a", "Paris", "regex")).grader == "regex"
    assert Grading(default=Grader.REGEX).resolve(_record("a", "Paris")).grader == "regex"   # --grader
    assert grading.resolve(_record("a")).reference is None
    with pytest.raises(InputError, match=r"the reference '\(unclosed' is not a valid regular expression"):
        grading.resolve(_record("a", "(unclosed", "regex"))
    with pytest.raises(InputError, match="holds no number"):
        Grading(default=Grader.NUMBER).resolve(_record("a", "Paris"))


def test_a_lower_case_option_letter_is_graded_by_choice(tmp_path: Path) -> None:
    """A single option letter in either case, with or without parentheses, gets the choice
    grader when none is named, in the log and in a references file alike."""
    for reference in ("(b)", "b", "b)", "c.", "(C)"):
        assert Grading(default=None).resolve(_record("a", reference)).grader == "choice"
    path = write(tmp_path, lines({"id": "q1", "reference": "(b)"}, {"id": "q2", "reference": "d"},
                                 {"id": "q3", "reference": "b", "grader": "exact"}), "refs.jsonl")
    assert {k: r.grader.value for k, r in read_references(path).items()} == {
        "q1": "choice", "q2": "choice", "q3": "exact"}                      # a named grader still wins


def test_a_references_file_by_id_wins_over_the_log(tmp_path: Path) -> None:
    path = write(tmp_path, lines({"id": "q1", "reference": 42},
                                 {"custom_id": "q2", "reference": "(?-i:Paris)", "grader": "regex"},
                                 {"question_id": 3, "reference": ["4", "five"]},
                                 {"id": "nobody", "reference": "x"}), "refs.jsonl")
    refs = read_references(path)
    assert {k: (r.reference, r.grader.value, r.line) for k, r in refs.items()} == {
        "q1": (42, "number", 1), "q2": ("(?-i:Paris)", "regex", 2), "3": ("4", "number", 3),
        "nobody": ("x", "exact", 4)}
    assert read_references(path, turn=2)["3"].reference == "five"
    grading = Grading(None, refs, path)
    # the file wins over the log line's own reference (and grader), and says so at the end
    record = grading.resolve(_record("q1", "41", "exact", line=7))
    assert (record.reference, record.grader) == (42, "number")
    assert grading.resolve(_record("3")).reference == "4"                  # an MT-Bench question_id, an int
    assert grading.resolve(_record("q9", "B")).grader == "choice"          # not in the file: the log's own
    overridden, unmatched = grading.notes()
    assert overridden.startswith("1 records have a reference or grader in the log and a reference in") \
        and "the file's was used (log lines 7)" in overridden
    assert unmatched.startswith("2 of the 4 references in") and "'q2', 'nobody'" in unmatched


def test_mt_bench_reference_answers(tmp_path: Path) -> None:
    """MT-Bench keeps its reference answers apart: question_id, model_id, choices[0].turns."""
    path = write(tmp_path, lines(
        {"question_id": 111, "answer_id": "x", "model_id": "gpt-4",
         "choices": [{"index": 0, "turns": ["The area is 3.", "The radius is about 1.8."]}], "tstamp": 1.0},
        {"question_id": 112, "model_id": "gpt-4", "choices": [{"index": 0, "turns": ["", "Fine."]}]}), "ref.jsonl")
    refs = read_references(path, default=Grader.NUMBER)
    assert set(refs) == {"111"} and refs["111"].reference == "The area is 3."   # 112 has none for turn 1
    assert read_references(path, turn=2, default=Grader.REGEX)["112"].reference == "Fine."
    with pytest.raises(InputError, match=r"ref.jsonl, line 1: has 2 turns, turn 3 is replayed"):
        read_references(path, turn=3)
    with pytest.raises(InputError, match=r"line 2: the reference 'Fine.' holds no number"):
        read_references(path, turn=2, default=Grader.NUMBER)


@pytest.mark.parametrize(("line", "reason"), [
    ("{not json", "line 2: not valid JSON"),
    ('["q1", 42]', "line 2: expected a JSON object, got list"),
    ({"reference": 42}, "line 2: no id: a reference line has id, custom_id or question_id"),
    ({"id": "q2"}, "line 2: no reference: a line has a reference field, or MT-Bench's choices"),
    ({"id": "q2", "reference": [1, 2], "grader": "number"}, None),   # a list per turn: fine
    ({"id": "q2", "reference": {"a": 1}}, "line 2: a reference is a string or a number, not dict"),
    ({"id": "q2", "reference": "x", "grader": "fuzzy"}, "line 2: unknown grader 'fuzzy'"),
    ({"id": "q2", "reference": "a(b", "grader": "regex"}, r"line 2: the reference 'a\(b' is not a valid regular"),
    ({"id": "q1", "reference": 43}, r"line 2: id 'q1' is given twice \(line 1 has it too\)"),
    ({"id": "q1", "reference": ""}, r"line 2: id 'q1' is given twice"),        # even one with no reference
    ({"id": "q2", "reference": None, "grader": "nubmer"}, "line 2: unknown grader 'nubmer'"),
    ({"id": True, "reference": 4}, "line 2: an id is a string or a whole number, not true"),
    ({"id": 1.5, "reference": 4}, "line 2: an id is a string or a whole number, not 1.5"),
])
def test_bad_lines_of_a_references_file_stop_with_their_line_number(tmp_path: Path, line: object,
                                                                      reason: str | None) -> None:
    path = write(tmp_path, lines({"id": "q1", "reference": 42}, line), "refs.jsonl")
    if reason is None:
        read_references(path)
        return
    with pytest.raises(InputError, match=rf"refs.jsonl, {reason}"):
        read_references(path)


def test_a_references_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "refs.jsonl"
    path.write_bytes(b'{"id": "q1", "reference": "\xff"}\n')
    with pytest.raises(InputError, match="not UTF-8"):
        read_references(path)
    with pytest.raises(InputError, match="cannot read references"):
        read_references(tmp_path / "missing.jsonl")
