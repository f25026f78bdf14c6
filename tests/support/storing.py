"""What the store's tests share: a pair with every figure filled in, a run's settings, a member made to look dead,
threads released at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from shadowdiff.answers.compare import compare
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store, schema
from shadowdiff.vocabulary import Side


def pair(key: str, seq: int, base: str = "a b c", cand: str = "a b d") -> Pair:
    answers = {
        Side.BASELINE: Answer(Side.BASELINE, "m", base, "stop", 5, 3, 0.01, 0.1, 200, tokens=["a", " b", " c"]),
        Side.CANDIDATE: Answer(Side.CANDIDATE, "m-fp8", cand, "stop", 5, 3, 0.01, 0.05, 200),
    }
    return Pair(key, seq, "/v1/chat/completions", "prompt é", {"messages": [{"role": "user", "content": "x"}]},
                compare(base, cand), answers, category="math", margin=0.2)


SETTINGS = {"primary": "http://a", "shadow": "http://b"}


def silence(store: Store, run_id: str, member: str, seconds: float) -> None:
    """Make ``member``'s last heartbeat ``seconds`` old (a killed process)."""
    m = schema.run_members.c
    with store.engine.begin() as c:
        c.execute(schema.run_members.update().where(m.run_id == run_id, m.member == member)
                  .values(heartbeat_at=datetime.now(UTC) - timedelta(seconds=seconds)))


def at_once(n: int, task: Callable[[int], Any]) -> list[Any]:
    """Run ``task(i)`` in ``n`` threads released together; their results (a failure re-raised)."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = task(i)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
