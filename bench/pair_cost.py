"""What one mirrored pair costs the proxy, by step, for the mirroring bench's changed pair.

The pair is ``bench/_instant.py``'s: ~1,000 characters of prose, the candidate's with a
few numbers and words changed, a non-streamed answer each. Steps (CPU per pair,
``time.process_time``, the median of ``--rounds`` rounds of ``--pairs`` pairs):

* ``redact``: the pair as it is stored (``Redactor.pair``, the default patterns and the
  client's header credentials);
* ``store``: ``Store.add_pairs`` in batches of 64 into a new SQLite store;
* ``make``: the whole of a pair's making (``Maker.make``: read both answers, compare,
  triage, redact, size), as the pairs' thread or the pair process does it;
* ``hand-over``: what the proxy's own process spends for a pair made by the pair
  process: the inputs pickled and the ``Made`` unpickled (the child's side is ``make``).

With ``PYTHONPATH`` at another checkout (``git archive REV | tar -x -C DIR``), the same
steps are timed on its code, those it has: before and after.

    python bench/pair_cost.py [--rounds 5] [--pairs 1000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson
from _instant import CHANGED, LONG, body

from shadowdiff.answers.compare import Thresholds, compare_answers
from shadowdiff.answers.parse import answer_from, read_answer
from shadowdiff.answers.records import Answer, prompt_text
from shadowdiff.answers.redact import Redactor, header_secrets
from shadowdiff.proxy.settings import DEFAULT_REDACTIONS
from shadowdiff.store import Store
from shadowdiff.triage.pairing import assemble_pair
from shadowdiff.vocabulary import Side

from _common import pin, table

REQUEST = {"model": "bench", "messages": [{"role": "user", "content": "Explain rivers."}], "temperature": 0,
           "max_tokens": 256}
HEADERS = [(b"content-type", b"application/json"), (b"authorization", b"Bearer sk-benchkey1234567890")]


def _answer(side: Side, text: str) -> Answer:
    return answer_from(Answer(side, "bench"), read_answer(body(text), False), 200, 1.0, None, 1.2, None, None)


def _pair() -> Any:
    answers = {Side.BASELINE: _answer(Side.BASELINE, LONG), Side.CANDIDATE: _answer(Side.CANDIDATE, CHANGED)}
    comparison = compare_answers(answers[Side.BASELINE], answers[Side.CANDIDATE], Thresholds())
    return assemble_pair("k", 1, "/v1/chat/completions", prompt_text(REQUEST), REQUEST, answers, comparison)


def _steps(pairs: int) -> dict[str, Callable[[], None]]:
    redactor = Redactor(DEFAULT_REDACTIONS).with_literals(header_secrets(HEADERS))
    pair = _pair()
    stored = redactor.pair(pair)
    steps: dict[str, Callable[[], None]] = {"redact": lambda: redactor.pair(pair)}
    folder = tempfile.mkdtemp()
    store = Store.open(os.path.join(folder, "store"))
    run = store.create_run("serve", {})
    count = [0]

    def add() -> None:   # 64 pairs a call, as the writer batches them: charged per pair below
        batch = [dataclasses.replace(stored, key=f"k{count[0] + i}", seq=count[0] + i) for i in range(64)]
        count[0] += 64
        store.add_pairs(run, batch)

    steps["store (per 64)"] = add
    try:
        from shadowdiff.proxy.pairmaking import Maker, MakerSettings, PairInputs
        from shadowdiff.proxy.shadow import Plan, ShadowReply
        from shadowdiff.proxy.tap import Tapped
    except ImportError:      # (a checkout from before the pair process)
        return steps
    maker = Maker(MakerSettings(Side.BASELINE, None, 0.9, DEFAULT_REDACTIONS))
    plan = Plan(orjson.dumps(REQUEST), REQUEST, False, True, headers=HEADERS)
    inputs = PairInputs("k", 1, "/v1/chat/completions", plan, Tapped(body(LONG), 200, False, 1.0, None, None, 1.2),
                        ShadowReply(Answer(Side.CANDIDATE, "bench"), "ok", body(CHANGED), False, 1.0, None, 1.2),
                        None, False, True)
    made = pickle.dumps([maker.make(inputs)], pickle.HIGHEST_PROTOCOL)
    steps["make"] = lambda: maker.make(inputs)
    steps["hand-over"] = lambda: (pickle.dumps([inputs], pickle.HIGHEST_PROTOCOL), pickle.loads(made))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    pin(0)
    steps = _steps(args.pairs)
    spent: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            calls = max(1, args.pairs // 64) if name.startswith("store") else args.pairs
            started = time.process_time()
            for _ in range(calls):
                step()
            per = 64 if name.startswith("store") else 1
            spent[name].append((time.process_time() - started) / (calls * per))
    where = os.environ.get("PYTHONPATH") or "this checkout"
    print(f"CPU per pair, µs (median of {args.rounds} rounds of {args.pairs} pairs; code: {where}; "
          f"python {sys.version.split()[0]})\n")
    print(table([("step", "µs a pair", "min", "max"),
                 *((name.replace(" (per 64)", ""), f"{statistics.median(v) * 1e6:,.1f}", f"{min(v) * 1e6:,.1f}",
                    f"{max(v) * 1e6:,.1f}") for name, v in spent.items())]))


if __name__ == "__main__":
    main()
