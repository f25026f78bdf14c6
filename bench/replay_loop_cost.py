"""Replay's own loop against the minimal client, in one process: CPU per streamed token.

``Replay.run`` (streaming, comparison, triage, the store's writes: no start-up, no
reports) and bench/_minimal_client.py's reading of the same prompts, alternated in one
process on core 1, against two zero-delay simulators on core 0. Steadier than
bench/startup_cost.py's whole runs, whose per-token figure is the difference of two
processes' CPU; what it leaves out (start-up, the reports) is measured there.
``--other-tree DIR`` measures another checkout's loop in the same rounds (each tree in a
process of its own): before and after in one run.

    python bench/replay_loop_cost.py [--prompts 200] [--rounds 2] [--repeats 4] [--other-tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CLIENT_CORE = 1
CONCURRENCY, MAX_TOKENS = 8, 256   # as bench/startup_cost.py's replay runs


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)   # every thread's: the store's writer too
    return used.ru_utime + used.ru_stime


def _minimal(log: Path, sides: list[str]) -> float:
    import _minimal_client  # (bench/, this script's directory)

    bodies = [json.loads(line) for line in log.read_text().splitlines()]
    printed = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(printed):
        before = _cpu()
        asyncio.run(_minimal_client.main(bodies, str(Path(tmp) / "out.jsonl"), sides, CONCURRENCY, MAX_TOKENS, 0))
        used = _cpu() - before
    return used / int(printed.getvalue().split()[-1]) * 1e6


def _replay(log: Path, sides: list[str]) -> float:
    from shadowdiff.answers.client import Upstream
    from shadowdiff.replay import logs
    from shadowdiff.replay.runner import Overrides, Replay, ReplaySettings
    from shadowdiff.store import Store
    from shadowdiff.vocabulary import Side

    (base, base_model), (cand, cand_model) = (side.split("=") for side in sides)
    settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, base, base_model),
                              candidate=Upstream(Side.CANDIDATE, cand, cand_model), concurrency=CONCURRENCY,
                              overrides=Overrides(max_tokens=MAX_TOKENS, logprobs=0), score=False)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "store")
        run = store.create_run("replay", {})
        before = _cpu()
        asyncio.run(Replay(settings, store, run).run(logs.LogFormat.BODIES))
        used = _cpu() - before
        tokens = sum((a.completion_tokens or 0) for p in store.pairs(run) for a in p.answers.values())
        store.close()
    return used / tokens * 1e6


def child(tree: str, log: Path, sides: list[str], repeats: int) -> None:
    """Measure ``tree``'s loop (imported from there: nothing of shadowdiff's is imported
    before) and the minimal client, alternated."""
    sys.path.insert(0, tree)
    os.sched_setaffinity(0, {CLIENT_CORE})
    _replay(log, sides)   # warm-up: imports, the simulators' first requests
    figures: dict[str, list[float]] = {"minimal": [], "replay": []}
    for i in range(repeats):
        for kind in ("minimal", "replay") if i % 2 == 0 else ("replay", "minimal"):
            figures[kind].append((_minimal if kind == "minimal" else _replay)(log, sides))
    import shadowdiff

    print(json.dumps({"from": shadowdiff.__file__, **figures}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="processes per tree, interleaved")
    parser.add_argument("--repeats", type=int, default=4, help="runs of each client in a process")
    parser.add_argument("--other-tree", default=None, metavar="DIR")
    parser.add_argument("--child", nargs=4, metavar=("TREE", "LOG", "SIDES", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tree, log, sides, repeats = args.child
        child(tree, Path(log), sides.split(","), int(repeats))
        return
    # (these import shadowdiff, from this tree: a child imports nothing of it before its tree's)
    from startup_cost import write_log

    from _common import ROOT, shadowdiff, table

    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    trees = {"this tree": ROOT, **({f"--other-tree {args.other_tree}": args.other_tree} if args.other_tree else {})}
    figures: dict[str, dict[str, list[float]]] = {name: {"minimal": [], "replay": []} for name in trees}
    with tempfile.TemporaryDirectory() as tmp, \
            shadowdiff("simulate", "--served-model-name", "base", core=0) as base, \
            shadowdiff("simulate", "--served-model-name", "cand", "--profile", "fp8", core=0) as cand:
        log = Path(tmp) / "log.jsonl"
        write_log(log, args.prompts)
        for round_ in range(args.rounds):
            for name, tree in (trees.items() if round_ % 2 == 0 else reversed(trees.items())):
                done = subprocess.run([sys.executable, __file__, "--child", tree, str(log), f"{base}=base,{cand}=cand",
                                       str(args.repeats)], capture_output=True, text=True, cwd=tree)
                if done.returncode != 0:
                    raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
                got = json.loads(done.stdout.splitlines()[-1])
                if not Path(got.pop("from")).resolve().is_relative_to(Path(tree).resolve()):
                    raise SystemExit(f"{name}: shadowdiff was not imported from {tree}")
                for kind, values in got.items():
                    figures[name][kind] += values
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    measured = {name: {kind: statistics.median(values) for kind, values in got.items()}
                for name, got in figures.items()}
    rows = [("tree", "minimal µs/token", "replay loop µs/token", "x", "replay's runs")]
    for name, got in figures.items():
        minimal, replay = measured[name]["minimal"], measured[name]["replay"]
        rows.append((name, f"{minimal:.2f}", f"{replay:.2f}", f"{replay / minimal:.2f}",
                     " ".join(f"{v:.1f}" for v in got["replay"])))
    print(f"Replay.run in-process against bench/_minimal_client.py's reading (medians of {args.rounds} x "
          f"{args.repeats} runs each, alternated): {args.prompts} prompts x 2 sides, --max-tokens {MAX_TOKENS}, "
          f"--logprobs 0, --concurrency {CONCURRENCY}, --no-score\n")
    print(table(rows))


if __name__ == "__main__":
    main()
