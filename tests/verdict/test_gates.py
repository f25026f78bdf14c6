"""The gates of a verdict kept with the run (``shadowdiff.verdict.gates``): where each value comes from."""

from __future__ import annotations

import math

import pytest

from shadowdiff.commands.options import Finite
from shadowdiff.errors import ConfigError
from shadowdiff.verdict import gates


def test_a_flag_beats_the_run_which_beats_the_default() -> None:
    settings = {"gates": gates.to_store({}, {"max_flips": 0, "min_reviewed": 0.5}, "replay")}
    resolved = gates.resolve(settings, {"max_flips": 3, "min_reviewed": 0.5}, "report").as_json()
    assert resolved["max_flips"]["text"] == "max flips 3 (given to report, over the run's --max-flips 0)"
    assert resolved["min_reviewed"]["text"] == "min reviewed 0.5 = 50 % (given to report)"   # the same as the run's
    assert gates.resolve(settings, {}, "report").as_json()["min_reviewed"]["text"] == \
        "min reviewed 0.5 = 50 % (from the run: replay --min-reviewed 0.5)"
    assert resolved["min_compared"] == {"flag": "--min-compared", "value": gates.MIN_COMPARED, "source": "default",
                                        "text": f"min compared {gates.MIN_COMPARED} (default)"}
    assert resolved["max_excess_divergence"]["text"] == "max excess divergence off (default)"
    # a share is read in percent beside the figures: 1 is every pair, not one
    assert gates.resolve({}, {}, "report").as_json()["min_reviewed"]["text"] == "min reviewed 1 = 100 % (default)"


def test_a_resume_without_a_flag_keeps_the_runs_gate() -> None:
    first = {"gates": gates.to_store({}, {"max_flips": 0, "max_errors": 2}, "replay")}
    again = gates.to_store(first, {"max_errors": 5}, "replay")
    assert again == {"by": "replay", "given": {"max_flips": 0, "max_errors": 5}, "first": {"max_errors": 2}}


def test_a_gate_a_resume_changed_says_what_the_run_began_with() -> None:
    """replay --max-flips 0 FAILed; a --resume --max-flips 100 of the finished run loosens it:
    every later report says so, however many resumes followed."""
    settings = {"gates": gates.to_store({}, {"max_flips": 0}, "replay")}
    for value in (100, 50):
        settings = {"gates": gates.to_store(settings, {"max_flips": value}, "replay")}
    resolved = gates.resolve(settings, {}, "report").as_json()["max_flips"]
    assert resolved["text"] == ("max flips 50 (from the run: replay --max-flips 50, changed by a resume from the "
                                "--max-flips 0 it began with)")
    assert resolved["first"] == 0
    unchanged = {"gates": gates.to_store({"gates": gates.to_store({}, {"max_flips": 0}, "replay")}, {}, "replay")}
    assert "first" not in gates.resolve(unchanged, {}, "report").as_json()["max_flips"]


@pytest.mark.parametrize("record", [
    {"given": {"max_flips": "0"}}, {"given": {"max_flips": -1}}, {"given": {"min_reviewed": 2}},
    {"given": {"max_flips": 0.5}}, {"given": {"min_reviewed": float("nan")}}, {"given": {"max_flips": True}},
    {"given": {"max_wobble": 1}}, {"given": [1]}, "max_flips=0"])
def test_a_stored_gate_that_is_not_one_is_refused(record: object) -> None:
    """A hand-edited store must not slip a gate past the verdict (a string compares as no number does)."""
    with pytest.raises(ConfigError):
        gates.resolve({"gates": record}, {}, "report")


def test_a_gate_given_as_minus_zero_is_zero() -> None:
    """``--min-token-agreement -0`` is a gate of 0, not one shown as "-0"."""
    value = Finite(0.0, 1.0).convert("-0", None, None)
    assert value == 0 and math.copysign(1.0, value) == 1.0
    settings = {"gates": gates.to_store({}, {"min_token_agreement": value}, "replay")}
    text = gates.resolve(settings, {}, "report").as_json()["min_token_agreement"]["text"]
    assert "-0" not in text and "0" in text, text


def test_a_share_reads_in_percent_a_difference_in_points_and_a_tiny_one_never_as_zero() -> None:
    given = {"min_token_agreement": 0.955, "max_excess_divergence": 0.001, "max_factual_rate": 1e-9,
             "max_token_disagreement": 0.05, "max_kl": 0.05}
    texts = {k: v["text"] for k, v in gates.resolve({}, given, "report").as_json().items()}
    assert texts["min_token_agreement"] == "min token agreement 0.955 = 95.5 % (given to report)"
    # (the verdict says "above --max-excess-divergence 0.1 points": a difference of two shares)
    assert texts["max_excess_divergence"] == "max excess divergence 0.001 = 0.1 points (given to report)"
    assert texts["max_token_disagreement"] == "max token disagreement 0.05 = 5 points (given to report)"
    assert texts["max_factual_rate"] == "max factual rate 1e-09 = 1e-07 % (given to report)"
    assert texts["max_kl"] == "max KL per token 0.05 (given to report)"    # nats, not a share


def test_without_review_the_min_reviewed_gate_says_it_is_not_applied() -> None:
    waived = gates.resolve({}, {"without_review": 1}, "report").as_json()["min_reviewed"]
    assert waived["text"] == "min reviewed 1 = 100 % (default; not applied: --without-review)" and waived["waived"]
    assert "waived" not in gates.resolve({}, {}, "report").as_json()["min_reviewed"]


def test_a_min_reviewed_given_turns_off_only_a_stored_without_review() -> None:
    waived_run = {"gates": gates.to_store({}, {"without_review": 1}, "replay")}
    undone = gates.resolve(waived_run, {"min_reviewed": 0.5}, "report").as_json()["without_review"]
    assert (undone["value"], undone["source"]) == (0, gates.OVERRIDDEN)
    plain = gates.resolve({}, {"min_reviewed": 0.5}, "report").as_json()["without_review"]
    assert (plain["value"], plain["source"]) == (0, gates.DEFAULT)
