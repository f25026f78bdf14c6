"""The bundled gradable workload end to end: 300 prompts with exact answers replayed
against a baseline, an fp8 candidate and a replica on loopback, graded by replay, and
the flips in summary.json matching what the simulators were configured to do.

The expectation is worked out apart from shadowdiff's graders: each prompt's answer as
each simulator writes it (the simulator's own generator, in this process), its
``Answer:`` line read with a regular expression of this test, compared with the
reference. The fp8 profile flips the value of the prompts its ``number`` drift selects
(4 % of prompts), so correct→wrong flips are about 0.04 × 300 × accuracy; a replica
changes no value.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.logs import bundled_workload
from shadowdiff.simulator import profiles
from shadowdiff.simulator.prompts import render_chat
from shadowdiff.simulator.sampling import Generator, Sampling
from shadowdiff.simulator.vocab import vocabulary
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.vocabulary import Decision, Side
from tests.support.replaying import replay_settings

WORKLOAD = bundled_workload().with_name("gradable.jsonl")
_ANSWER = re.compile(r"Answer:\s*\(?([^\s)]+?)\)?\.?\s*$")


def _right(text: str, reference: str) -> bool:
    found = _ANSWER.search(text.strip())
    if found is None:
        return False
    value = found.group(1).replace(",", "")
    try:
        return float(value) == float(reference)
    except ValueError:
        return value.casefold() == reference.casefold()


def _expected() -> dict[str, dict[Side, bool]]:
    vocab = vocabulary()
    made = {Side.BASELINE: ("baseline", 0), Side.CANDIDATE: ("fp8", 0), Side.REPLICA: ("baseline", 1)}
    generators = {side: Generator(profiles.builtin(p), seed, vocab) for side, (p, seed) in made.items()}
    out = {}
    for line in WORKLOAD.read_text().splitlines():
        record = json.loads(line)
        rendered = render_chat(record["messages"])
        sampling = Sampling(prompt=rendered, prompt_ids=tuple(vocab.ids(rendered)), max_tokens=record["max_tokens"])
        out[record["id"]] = {side: _right(g.generate(sampling)[0].text, record["reference"])
                             for side, g in generators.items()}
    return out


def test_the_gradable_workload_flips_as_the_fp8_profile_was_configured(sides: dict[Side, str],
                                                                         tmp_path: Path) -> None:
    expected = _expected()
    base_right = sum(e[Side.BASELINE] for e in expected.values())
    c2w = [k for k, e in expected.items() if e[Side.BASELINE] and not e[Side.CANDIDATE]]
    w2c = [k for k, e in expected.items() if e[Side.CANDIDATE] and not e[Side.BASELINE]]
    # the simulators as configured: 90 % right, the fp8's number drift (4 %) flipping values
    assert len(expected) == 300 and 240 <= base_right <= 290, base_right
    assert 3 <= len(c2w) <= 25, c2w
    assert all(e[Side.REPLICA] == e[Side.BASELINE] for e in expected.values())

    out = tmp_path / "out"
    # (not scored: grading is the subject, and teacher forcing would read 300 answers back
    # on each side; tests/replay/test_scoring_e2e.py is where scoring is checked)
    verdict = run_replay(replay_settings(WORKLOAD, sides, concurrency=16, score=False), out, None, resume=False,
                         gates={"max_flips": 0})
    assert verdict.decision is Decision.FAIL     # a correct→wrong flip fails --max-flips 0
    flips = json.loads((out / "summary.json").read_text())["flips"]
    assert flips["graded"] == 300
    assert flips["baseline_correct"] == base_right
    assert flips["candidate_correct"] == sum(e[Side.CANDIDATE] for e in expected.values())
    assert (flips["correct_to_wrong"], flips["wrong_to_correct"]) == (len(c2w), len(w2c))
    assert flips["noise"]["correct_to_wrong"] == flips["noise"]["wrong_to_correct"] == 0
    assert 0 < flips["mcnemar_p"] <= 1

    # the flipped pairs head the review queue
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        queue = ReviewQueue(store).page(Filters(run_id=run.id), limit=len(c2w) + len(w2c))
        assert {row["key"] for row in queue} == set(c2w + w2c)
    finally:
        store.close()
