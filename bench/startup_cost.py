"""What the command line costs before it does anything, and what replay costs against a minimal client.

Three measurements, each a median of fresh processes, the reference measured in the
same run (interleaved rounds) and a control beside it:

* ``--help`` of the top-level group and of ``serve``, ``replay`` and ``report``: the CPU
  of a whole fresh interpreter (user + system, from ``getrusage(RUSAGE_CHILDREN)``), its
  bytecode cached by a warm-up run, and the modules it loads; the control is
  ``python -c pass``, the floor of any Python process.
* replay's fixed cost: CPU from the process's start to its first chat request (read from
  ``/proc/PID/stat`` by a stub server at the moment the request arrives), and the CPU of a
  whole one-prompt run (preflight, store, reports, exit), against bench/_minimal_client.py
  doing the same prompt, and that client against itself (the control).
* replay's per-token CPU: (CPU of a PROMPTS-line run - CPU of the one-line run) / tokens
  streamed, against two zero-delay simulators on the other core, for ``replay
  --no-score`` (scoring off), ``replay --score`` (teacher-forced scoring, for its cost
  per pair), the minimal client and the minimal client again (the control).

    python bench/startup_cost.py [--runs 7] [--prompts 200] [--rounds 3] [--skip-help] [--skip-replay]
                                 [--skip-score] [--other-tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import ROOT, shadowdiff, table

PYTHON = sys.executable
CLIENT_CORE = 1   # the measured processes; simulators and the stub server on core 0
HELPS = {"python -c pass (control)": ["-c", "pass"],
         "shadowdiff --help": ["-m", "shadowdiff", "--help"],
         "shadowdiff serve --help": ["-m", "shadowdiff", "serve", "--help"],
         "shadowdiff replay --help": ["-m", "shadowdiff", "replay", "--help"],
         "shadowdiff report --help": ["-m", "shadowdiff", "report", "--help"]}
HEAVY = ("sqlalchemy", "alembic", "aiohttp", "httpx", "jinja2", "uvicorn", "rapidfuzz", "tqdm")

# Runs the command line in this interpreter (as ``python -m shadowdiff`` would) and prints
# what it loaded: the number of modules, and the top-level packages.
_LOADED = """
import contextlib, io, json, runpy, sys
sys.argv = ["shadowdiff", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("shadowdiff", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
print(json.dumps([len(sys.modules), sorted({m.split(".")[0] for m in sys.modules})]))
"""


def _on_client_core() -> None:
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {CLIENT_CORE})


def cpu_of(cmd: list[str], **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``cmd`` to its end on the client core; (its CPU seconds, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, preexec_fn=_on_client_core,
                          **kwargs)  # type: ignore[call-overload]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def help_costs(runs: int) -> None:
    for args in HELPS.values():   # warm-up: bytecode written, files in the page cache
        cpu_of([PYTHON, *args])
    cpu: dict[str, list[float]] = {name: [] for name in HELPS}
    for _ in range(runs):
        for name, args in HELPS.items():
            cpu[name].append(cpu_of([PYTHON, *args])[0])
    floor = statistics.median(cpu["python -c pass (control)"])
    rows = [("command", "CPU s (median)", "min", "max", "above python", "modules", "heavy libraries loaded")]
    for name, args in HELPS.items():
        if args[0] == "-m":
            count, top = json.loads(cpu_of([PYTHON, "-c", _LOADED, *args[2:]])[1].stdout)
        else:
            count, top = json.loads(cpu_of([PYTHON, "-c", "import json, sys; print(json.dumps("
                                            "[len(sys.modules), []]))"])[1].stdout)
        heavy = [name for name in HEAVY if name in top]
        median = statistics.median(cpu[name])
        rows.append((name, f"{median:.3f}", f"{min(cpu[name]):.3f}", f"{max(cpu[name]):.3f}",
                     f"{median - floor:+.3f}", str(count), ", ".join(heavy) or "-"))
    print(f"--help in a fresh interpreter, {runs} interleaved runs each, CPU = user + system\n")
    print(table(rows))


class FirstRequest:
    """A stub OpenAI server on two ports (two sides) that notes the CPU a process had used
    when its first chat request arrived, and answers every chat request with a one-token
    stream (anything else: 404)."""

    _EVENTS = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
               b'"delta":{"content":"Hi"},"logprobs":null,"finish_reason":"stop"}]}\n\n'
               b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],'
               b'"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\ndata: [DONE]\n\n')

    def __init__(self) -> None:
        self.pid = 0
        self.cpu: float | None = None
        self.urls: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True).start()
        self._ready.wait(10)

    def watch(self, pid: int) -> None:
        self.pid, self.cpu = pid, None

    async def _serve(self) -> None:
        servers = [await asyncio.start_server(self._handle, "127.0.0.1", 0) for _ in range(2)]
        self.urls = [f"http://127.0.0.1:{s.sockets[0].getsockname()[1]}" for s in servers]
        self._ready.set()
        await asyncio.Event().wait()

    def _note(self) -> None:
        if self.cpu is None and self.pid:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
                self.cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith(
                    "content-length:")), 0)
                await reader.readexactly(length)
                if "/chat/completions" in lines[0]:
                    self._note()
                    status, kind, body = "200 OK", "text/event-stream", self._EVENTS
                else:
                    status, kind, body = "404 Not Found", "application/json", b"{}"
                writer.write(f"HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n\r\n"
                             .encode() + body)
                await writer.drain()
        writer.close()


def write_log(path: Path, lines: int) -> None:
    with path.open("w") as f:
        for i in range(lines):
            f.write(json.dumps({"messages": [{"role": "user", "content": f"Question {i}: explain topic {i % 97} "
                                              "in detail."}], "ignore_eos": True}) + "\n")


def _tokens_stored(out: Path) -> int:
    from shadowdiff.store import STORE_FILE, Store  # (the bench's own import: only the replay rows need it)

    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        return sum((a.completion_tokens or 0) for p in store.pairs(run.id) for a in p.answers.values())
    finally:
        store.close()


def comparison_cost(out: Path) -> tuple[float, int]:
    """CPU seconds a pair of the replay stored in ``out`` takes to compare and triage again
    (``compare_answers`` and ``assemble_pair``, as the runner calls them), and its tokens."""
    from shadowdiff.answers.compare import Thresholds, compare_answers
    from shadowdiff.store import STORE_FILE, Store
    from shadowdiff.triage.pairing import assemble_pair
    from shadowdiff.vocabulary import Side

    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        answers = [p.answers for p in store.pairs(run.id)]
    finally:
        store.close()
    started = time.process_time()
    for i, pair in enumerate(answers):
        comparison = compare_answers(pair[Side.BASELINE], pair[Side.CANDIDATE], Thresholds())
        assemble_pair(f"k{i}", i, "/v1/chat/completions", "", {}, pair, comparison)
    tokens = sum((a.completion_tokens or 0) for pair in answers for a in pair.values())
    return (time.process_time() - started) / len(answers), tokens


def run_client(kind: str, log: Path, sides: list[tuple[str, str | None]], tmp: Path, args: argparse.Namespace,
               first: FirstRequest | None = None, tree: str = ROOT) -> tuple[float, int, Path]:
    """One run of ``kind`` (minimal, replay, replay+score) over ``log``: (CPU s, tokens, its --out)."""
    out = Path(tempfile.mkdtemp(dir=tmp))
    if kind == "minimal":
        cmd = [PYTHON, str(Path(ROOT) / "bench" / "_minimal_client.py"), str(log), str(out / "answers.jsonl"),
               str(args.concurrency), str(args.max_tokens), str(args.logprobs),
               *(f"{url}={model or ''}" for url, model in sides)]
    else:
        cmd = [PYTHON, "-m", "shadowdiff", "replay", str(log), "--baseline", sides[0][0], "--candidate",
               sides[1][0], "--out", str(out), "--concurrency", str(args.concurrency), "--max-tokens",
               str(args.max_tokens), "--logprobs", str(args.logprobs),
               "--score" if kind == "replay+score" else "--no-score"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # (``python -m shadowdiff`` runs the package in its working directory: ``tree``'s)
    process = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_on_client_core)
    if first is not None:
        first.watch(process.pid)
    stdout, stderr = process.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {process.returncode}: {stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if first is not None:
        return (first.cpu if first.cpu is not None else float("nan")), 0, out
    return cpu, int(stdout.split()[-1]) if kind == "minimal" else _tokens_stored(out), out


KINDS = ("minimal", "minimal (control)", "replay --no-score", "replay --score")
OTHER = "replay --no-score, --other-tree"


def _kind(name: str) -> str:
    return {"replay --no-score": "replay", "replay --score": "replay+score", OTHER: "replay"}.get(name, "minimal")


def replay_costs(args: argparse.Namespace) -> None:
    kinds = tuple(k for k in KINDS if not (args.skip_score and k == "replay --score"))
    kinds += (OTHER,) if args.other_tree else ()
    trees = {kind: args.other_tree if kind == OTHER else ROOT for kind in kinds}
    first = FirstRequest()
    with tempfile.TemporaryDirectory() as tmp_name, \
            shadowdiff("simulate", "--served-model-name", "base", core=0) as base, \
            shadowdiff("simulate", "--served-model-name", "cand", "--profile", "fp8", core=0) as cand:
        tmp = Path(tmp_name)
        one, many = tmp / "one.jsonl", tmp / "many.jsonl"
        write_log(one, 1)
        write_log(many, args.prompts)
        sims: list[tuple[str, str | None]] = [(base, "base"), (cand, "cand")]
        stubs: list[tuple[str, str | None]] = [(url, None) for url in first.urls]
        to_first: dict[str, list[float]] = {k: [] for k in kinds}
        whole_one: dict[str, list[float]] = {k: [] for k in kinds}
        per_token: dict[str, list[float]] = {k: [] for k in kinds}
        extra: dict[str, list[float]] = {k: [] for k in kinds}
        tokens: dict[str, int] = {}
        for kind in kinds:   # warm-up: bytecode, page cache, the simulators' first requests
            run_client(_kind(kind), one, sims, tmp, args, tree=trees[kind])
        for round_ in range(args.rounds):
            order = kinds if round_ % 2 == 0 else tuple(reversed(kinds))
            for kind in order:
                to_first[kind].append(run_client(_kind(kind), one, stubs, tmp, args, first, tree=trees[kind])[0])
                fixed, _, _ = run_client(_kind(kind), one, sims, tmp, args, tree=trees[kind])
                total, streamed, out = run_client(_kind(kind), many, sims, tmp, args, tree=trees[kind])
                if kind == "replay --no-score":
                    stored = out
                whole_one[kind].append(fixed)
                per_token[kind].append((total - fixed) / streamed * 1e6)
                extra[kind].append(total - fixed)
                tokens[kind] = streamed
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
        per_pair, pair_tokens = comparison_cost(stored)
    ref = {name: statistics.median(values["minimal"]) for name, values in
           (("first", to_first), ("one", whole_one), ("token", per_token))}
    rows = [("client", "CPU to 1st request s", "x", "1-prompt run CPU s", "x", "µs CPU per token", "x",
             "tokens")]
    for kind in kinds:
        f, o, t = (statistics.median(v[kind]) for v in (to_first, whole_one, per_token))
        rows.append((kind, f"{f:.3f}", f"{f / ref['first']:.2f}", f"{o:.3f}", f"{o / ref['one']:.2f}", f"{t:.2f}",
                     f"{t / ref['token']:.2f}", f"{tokens[kind]:,}"))
    print(f"\nreplay against bench/_minimal_client.py: medians of {args.rounds} interleaved rounds; two zero-delay "
          f"simulators on core 0, clients on core {CLIENT_CORE}; {args.prompts} prompts x 2 sides, "
          f"--max-tokens {args.max_tokens}, --logprobs {args.logprobs}, --concurrency {args.concurrency}\n")
    print(table(rows))
    if args.other_tree:
        print(f"\n(--other-tree: {args.other_tree})")
    if not args.skip_score:
        score = statistics.median(extra["replay --score"]) - statistics.median(extra["replay --no-score"])
        print(f"\n--score's extra CPU: {score / args.prompts * 1e3:.2f} ms a pair (replay --score minus "
              "--no-score, the prompts' part of each run)")
    without = statistics.median(per_token["replay --no-score"]) - per_pair * 1e6 * args.prompts / pair_tokens
    print(f"comparison and triage (compare_answers + assemble_pair, run again on the stored pairs in this "
          f"process): {per_pair * 1e3:.2f} ms a pair, {per_pair * 1e6 * args.prompts / pair_tokens:.2f} µs a "
          f"token; replay --no-score without them (derived): {without:.2f} µs a token, "
          f"{without / ref['token']:.2f}x the minimal client")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh runs of each --help")
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--logprobs", type=int, default=0)
    parser.add_argument("--skip-help", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--skip-score", action="store_true", help="leave out replay --score")
    parser.add_argument("--other-tree", default=None, metavar="DIR",
                        help="also run replay --no-score from this checkout (e.g. `git archive main | tar -x -C DIR`), "
                             "interleaved: before and after in one run")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})   # this process serves the stub; the measured ones run on the other core
    if not args.skip_help:
        help_costs(args.runs)
    if not args.skip_replay:
        replay_costs(args)


if __name__ == "__main__":
    main()
