"""What the studies share: running ``shadowdiff`` as a user does, and storing the verdicts
given by reading a run's changed pairs through the review queue the review UI uses."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

REVIEWER = "study"


def shadowdiff(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "shadowdiff", *args]
    print("+ shadowdiff " + " ".join(args), file=sys.stderr, flush=True)
    started = time.monotonic()
    result = subprocess.run(command, text=True, stdout=subprocess.PIPE)
    print(f"  ({time.monotonic() - started:.0f} s, exit {result.returncode})", file=sys.stderr, flush=True)
    return result


def answers_digest(baseline: str, candidate: str) -> str:
    """What a verdict was given about: the two texts the reviewer read."""
    return hashlib.sha256((baseline + "\0" + candidate).encode()).hexdigest()[:16]


def apply_verdicts(run_dir: Path, verdicts: Path, export: Path) -> None:
    """Store the reviewer's verdicts (``{key: {"verdict", "side"?, "note", "answers_sha256"}}``)
    through the review queue the review UI uses, then export every verdict the store holds,
    as the UI's /review/export.jsonl does, to ``export``. A verdict is stored only on the
    very answers it was given about: if a rerun's answers differ (another engine build,
    another CPU, batching), it is left out and said so, never attached to texts nobody read."""
    from shadowdiff.store import Store
    from shadowdiff.store.review import ReviewQueue
    from shadowdiff.vocabulary import Side

    wanted = json.loads(verdicts.read_text())
    store = Store.open(run_dir)
    try:
        run = store.latest_run("replay")
        assert run is not None
        queue = ReviewQueue(store)
        pairs = {pair.row["key"]: pair for pair in store.pairs(run.id)}
        done = {row["key"] for row in queue.export(run.id) if row["reviewer"] == REVIEWER}
        for key, verdict in wanted.items():
            pair = pairs[key]
            read = answers_digest(pair.answers[Side.BASELINE].text, pair.answers[Side.CANDIDATE].text)
            if read != verdict["answers_sha256"]:
                print(f"verdict on {key} not stored: the answers differ from those reviewed", file=sys.stderr)
            elif key not in done:
                queue.add_review(pair.row["id"], REVIEWER, verdict["verdict"], verdict.get("side"),
                                 verdict.get("note", ""))
        with export.open("w") as file:
            for row in queue.export(run.id):
                file.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        store.close()
