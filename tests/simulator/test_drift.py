"""Profiles and drift: rates, stability, and the shape of each kind of difference."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

from shadowdiff.errors import ProfileError
from shadowdiff.simulator import profiles
from shadowdiff.simulator.baseline_text import generate, prompt_key
from shadowdiff.simulator.drift import apply_profile, first_difference, near_tie_alternative, replica_flip
from shadowdiff.simulator.profiles import DriftKind, Profile
from shadowdiff.simulator.vocab import vocabulary

MT_BENCH = Path(__file__).resolve().parents[2] / "examples" / "mt_bench_questions.jsonl"
PROMPTS = [f"Question {i}: explain {topic} for a newcomer."
           for i, topic in enumerate(["rivers", "taxes", "compilers", "gardens", "bridges"] * 80)]


def drifted(profile: Profile, prompt: str) -> tuple[list[str], list[str], DriftKind | None, DriftKind | None]:
    v = vocabulary()
    base = v.encode(generate(prompt).text)
    result = apply_profile(profile, prompt_key(prompt), prompt, base)
    return [t.text for t in base], [t.text for t in v.encode(result.text)], result.planned, result.kind


def normalized(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def test_builtin_profiles_are_valid() -> None:
    assert profiles.builtin("baseline").rates == {}
    fp8 = profiles.builtin("fp8")
    assert fp8.speed == 1.5
    assert 0 < sum(fp8.rates.values()) < 1
    with pytest.raises(ProfileError, match="unknown profile"):
        profiles.builtin("fp4")


@pytest.mark.parametrize("name", ["fp8", "fp8-heavy"])
def test_planned_rates_match_the_profile(name: str) -> None:
    profile = profiles.builtin(name)
    planned = Counter(drifted(profile, p)[2] for p in PROMPTS)
    n = len(PROMPTS)
    for kind in DriftKind:
        rate = profile.rate(kind)
        # within 4.5 standard deviations of the binomial expectation
        slack = 4.5 * math.sqrt(n * rate * (1 - rate)) + 1
        assert abs(planned[kind] - n * rate) <= slack, (kind, planned[kind], n * rate)


def test_choice_per_prompt_is_stable_and_rates_nest() -> None:
    low = profiles.builtin("fp8").with_rates({DriftKind.NUMBER: 0.02})
    high = low.with_rates({DriftKind.NUMBER: 0.2})
    low_numbers = {p for p in PROMPTS if drifted(low, p)[2] is DriftKind.NUMBER}
    high_numbers = {p for p in PROMPTS if drifted(high, p)[2] is DriftKind.NUMBER}
    assert low_numbers and low_numbers <= high_numbers
    assert [drifted(low, p)[1] for p in PROMPTS[:20]] == [drifted(low, p)[1] for p in PROMPTS[:20]]


def test_every_kind_shares_an_identical_prefix_then_differs_its_own_way() -> None:
    profile = profiles.builtin("fp8-heavy")
    seen: set[DriftKind] = set()
    for prompt in PROMPTS:
        base, cand, _, kind = drifted(profile, prompt)
        if kind is None:
            assert cand == base
            continue
        seen.add(kind)
        at = first_difference_texts(base, cand)
        assert at is not None and at >= 1, (kind, prompt)
        assert base[:at] == cand[:at]
        base_text, cand_text = "".join(base), "".join(cand)
        if kind is DriftKind.FORMATTING:
            assert normalized(base_text) == normalized(cand_text)
        else:
            assert normalized(base_text) != normalized(cand_text)
        if kind is DriftKind.NUMBER:
            assert len(cand) == len(base)
            changed = [(a, b) for a, b in zip(base, cand, strict=True) if a != b]
            assert len(changed) == 1 and all(re.fullmatch(r" ?\d", t) for t in changed[0])
        if kind is DriftKind.REPETITION:
            assert cand[at] == cand[at - 1] and cand[:at] + cand[at + 1:] == base
        if kind is DriftKind.EARLY_STOP:
            assert base_text.startswith(cand_text) and len(cand) < len(base)
        if kind is DriftKind.LIST_ITEM:
            assert len(cand_text) > len(base_text)
        if kind is DriftKind.WORDING:
            assert near_tie_alternative(prompt_key(prompt), at, base[at]) == cand[at]
    assert seen == {kind for kind in DriftKind if kind.in_text}   # the others: test_whole_answers.py


def first_difference_texts(base: list[str], cand: list[str]) -> int | None:
    v = vocabulary()
    return first_difference(v.encode("".join(base)), v.encode("".join(cand)))


def test_replica_differs_only_rarely_and_at_near_ties() -> None:
    v = vocabulary()
    flips = 0
    for prompt in PROMPTS:
        base = v.encode(generate(prompt).text)
        flipped = replica_flip(prompt_key(prompt), seed=1, rate=0.03, prompt=prompt, tokens=base)
        if flipped is None:
            continue
        flips += 1
        at = first_difference(base, v.encode(flipped))
        assert at is not None and near_tie_alternative(prompt_key(prompt), at, base[at].text) is not None
    assert 1 <= flips <= 30  # 3 % of 400 is 12
    assert all(replica_flip(prompt_key(p), 0, 1.0, p, v.encode(generate(p).text)) is None for p in PROMPTS[:5])


def test_profile_file_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "int4.toml"
    path.write_text('name = "int4"\nbase = "fp8"\nspeed = 2.0\n[rates]\nnumber = 0.10\n')
    loaded = profiles.load(path)
    assert loaded.name == "int4" and loaded.speed == 2.0
    assert loaded.rate(DriftKind.NUMBER) == 0.10
    assert loaded.rate(DriftKind.WORDING) == profiles.builtin("fp8").rate(DriftKind.WORDING)
    assert profiles.parse_drift("wording=0.5") == (DriftKind.WORDING, 0.5)
    for bad in ("wording", "typo=0.1", "number=lots"):
        with pytest.raises(ProfileError, match="--drift"):
            profiles.parse_drift(bad)
    with pytest.raises(ProfileError, match="add up to"):
        profiles.builtin("fp8").with_rates({DriftKind.WORDING: 0.9})
    path.write_text('speed = "fast"\n')
    with pytest.raises(ProfileError):
        profiles.load(path)
    path.write_text("colour = 1\n")
    with pytest.raises(ProfileError, match="unknown keys"):
        profiles.load(path)


def test_mt_bench_answers_are_deterministic_and_synthetic() -> None:
    questions = [json.loads(line)["turns"][0] for line in MT_BENCH.read_text().splitlines()]
    for q in questions:
        a, b = generate(q), generate(q)
        assert a == b
        assert re.search(r"\d", a.text), q  # every answer has a number a flip can change
        assert "as an ai" not in a.text.lower() and "language model" not in a.text.lower()


@pytest.mark.parametrize("name", ["fp8", "fp8-heavy"])
def test_applied_rates_match_the_profile(name: str) -> None:
    """Not just the plan: the share of answers that really differ from the baseline."""
    profile = profiles.builtin(name)
    changed = sum(drifted(profile, p)[1] != drifted(profile, p)[0] for p in PROMPTS)
    expected = sum(profile.rates.values()) * len(PROMPTS)
    assert abs(changed - expected) <= 4.5 * math.sqrt(expected) + 5
