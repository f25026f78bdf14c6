"""What triaging one changed pair costs (``triage_answers``), now and before its hot paths
were made faster, measured in the same run.

The reference is shadowdiff/triage/signals.py as git holds it at ``--ref`` (by default the
commit before the speed-up), loaded as a module of its own. Per pair, in interleaved
rounds on one core: CPU per ``triage_answers`` call of the current code, of the reference,
and of the reference again (the control: the reference against itself). Before timing,
both must give the same triage for the pair.

Pairs: the proxy bench's (bench/_instant.py: about 1,000 characters of prose with numbers,
and the same with a few numbers and words changed), the simulator's answers to a few
prompts with the drift of its heavy FP8 profile, and a 32,000-character pair.

    python bench/triage_cost.py                 # against the commit before the speed-up
    python bench/triage_cost.py --ref main      # against another commit or branch
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from shadowdiff.answers.compare import compare_answers
from shadowdiff.answers.records import Answer
from shadowdiff.simulator import drift, profiles
from shadowdiff.simulator.baseline_text import generate, prompt_key
from shadowdiff.triage import signals
from shadowdiff.vocabulary import Side

from _common import pin, table

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "2116924"   # main before the triage's speed-up


def reference(ref: str) -> ModuleType:
    """shadowdiff/triage/signals.py at ``ref``, as a module (registered, as dataclasses need)."""
    source = subprocess.run(["git", "show", f"{ref}:shadowdiff/triage/signals.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("_signals_reference", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, f"{ref}:shadowdiff/triage/signals.py", "exec"), module.__dict__)
    return module


def _answer(side: Side, text: str) -> Answer:
    return Answer(side, "bench", text=text, finish_reason="stop", status=200)


def pairs() -> dict[str, tuple[str, str]]:
    # the mirroring bench's answers (bench/_instant.py, a sibling module, as _common is)
    instant = importlib.import_module("_instant")
    long, changed = instant.LONG, instant.CHANGED
    profile = profiles.builtin("fp8-heavy")
    simulated = []
    for i in range(40):
        prompt = f"Explain how rivers, bridges and taxes work, part {i}."
        base = generate(prompt).text
        cand = drift.apply_profile(profile, prompt_key(prompt), prompt, drift.retokenize(base)).text
        if cand != base:
            simulated.append((base, cand))
        if len(simulated) == 3:
            break
    long_base = "\n\n".join([long] * 32)
    return {
        "bench pair (1k chars)": (long, changed),
        **{f"simulator fp8-heavy #{i} ({len(a):,} chars)": (a, b) for i, (a, b) in enumerate(simulated, 1)},
        "32k chars": (long_base, long_base[:16_000] + changed + long_base[16_000 + len(long):]),
    }


def cpu_per_call(call: Callable[..., Any], args: tuple[Any, ...], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        call(*args)
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default=BEFORE, help="the commit or branch to measure against")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    pin(0)
    before = reference(args.ref)
    rows = [("pair", "now µs", f"{args.ref} µs", "control µs", "speed-up", "control ratio")]
    for name, (a, b) in pairs().items():
        base, cand = _answer(Side.BASELINE, a), _answer(Side.CANDIDATE, b)
        comparison = compare_answers(base, cand)
        now = signals.triage_answers(base, cand, comparison, None)
        if now != before.triage_answers(base, cand, comparison, None):
            raise SystemExit(f"{name}: the triage differs from {args.ref}'s")
        calls = max(3, int(2000 / (1 + len(a) / 1000)))
        timed: dict[str, list[float]] = {"now": [], "before": [], "control": []}
        for _ in range(args.rounds):
            for key, module in (("now", signals), ("before", before), ("control", before)):
                timed[key].append(cpu_per_call(module.triage_answers, (base, cand, comparison, None), calls))
        med = {k: statistics.median(v) * 1e6 for k, v in timed.items()}
        rows.append((name, f"{med['now']:.0f}", f"{med['before']:.0f}", f"{med['control']:.0f}",
                     f"{med['before'] / med['now']:.2f}x", f"{med['before'] / med['control']:.2f}"))
        print(f"{name}: signals {[s['kind'] for s in now['signals'] or ()]}", flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
