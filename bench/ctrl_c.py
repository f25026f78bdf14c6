"""How long a replay takes to stop after Ctrl+C, whatever its output goes to.

Two simulators with realistic latency, a 400-line log, and `shadowdiff replay` started in
a process group of its own with its output to a pipe whose reader outlives the signal,
to a pipe whose reader dies of it (`| tee`, as in a terminal), and to a file. After a
few seconds the group gets SIGINT, as a terminal's Ctrl+C sends it; the script prints
the seconds to the exit, the exit status, and whether what the run said it stored is
what the store holds.

    python bench/ctrl_c.py [--after 6] [--twice]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, shadowdiff

READERS = {"a pipe": "2>&1 | (trap '' INT; cat > {log})", "a closed pipe": "2>&1 | cat > {log}",
           "a file": "> {log} 2>&1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=6.0, help="seconds of replay before the Ctrl+C")
    parser.add_argument("--twice", action="store_true", help="a second Ctrl+C half a second after the first")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctrl-c-"))
    questions = [json.loads(line) for line in (Path(ROOT) / "examples" / "mt_bench_questions.jsonl").open()]
    log = work / "log.jsonl"
    log.write_text("".join(json.dumps({"id": f"q{i}", "prompt": questions[i % 80]["turns"][0] + f" ({i})"}) + "\n"
                           for i in range(400)))
    with shadowdiff("simulate", "--served-model-name", "Qwen/Qwen3-8B", "--latency", "realistic", core=1) as base, \
            shadowdiff("simulate", "--served-model-name", "Qwen/Qwen3-8B-FP8", "--profile", "fp8",
                       "--latency", "realistic", core=1) as cand:
        for reader, redirect in READERS.items():
            out, output = work / reader.replace(" ", "-"), work / f"{reader.replace(' ', '-')}.txt"
            command = (f"{sys.executable} -m shadowdiff replay {log} --baseline {base} --candidate {cand} "
                       f"--out {out} --max-tokens 64 " + redirect.format(log=output) + "; exit ${PIPESTATUS[0]}")
            process = subprocess.Popen(["bash", "-c", command], start_new_session=True, cwd=ROOT,
                                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            time.sleep(args.after)
            signalled = time.monotonic()
            os.killpg(process.pid, signal.SIGINT)
            if args.twice:
                time.sleep(0.5)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGINT)
            status = process.wait(120)
            seconds = time.monotonic() - signalled
            with sqlite3.connect(out / "shadowdiff.sqlite") as db:
                stored = db.execute("select count(*) from pairs").fetchone()[0]
            said = re.search(r"interrupted: (\d+) (?:more )?pairs? stored", output.read_text(errors="replace"))
            agrees = "not said (the reader is gone)" if said is None else \
                "as said" if int(said[1]) == stored else f"said {said[1]}"
            print(f"{reader:14}  exit {status}  {seconds:.2f} s after Ctrl+C  {stored} pairs stored, {agrees}")


if __name__ == "__main__":
    main()
