"""A ``shadowdiff bench --out`` file in a run's reports: the speed figure a release is
decided on.

A replay's own speed figures are measured under the replay's load: both sides asked at
once, several prompts at a time, often with three servers on one machine. ``bench``
measures each side alone, in alternated rounds, with an interval per ratio. When a run
has both (``replay --bench`` stores the file with the run; ``report --bench`` gives one
to a report), the headline shows bench's and puts the replay's beside it, as the figure
under the replay's load.

The file is read whole and checked before anything is stored: a hand-edited or truncated
one is refused with what is wrong, never shown as a speedup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shadowdiff.errors import InputError
from shadowdiff.statistics.rounds import ERRORS, MIN_ROUNDS, UNEQUAL, call

SETTINGS_KEY = "bench"      # in the run's settings
FIGURES = ("tokens_per_second", "ttft_p50", "latency_p50")
WITHHELD = (ERRORS, UNEQUAL)   # bench's verdicts that call nothing, whatever the interval


def read(path: Path) -> dict[str, Any]:
    """The figures of a bench file, as a run keeps them; ``InputError`` naming what is
    wrong with one that is not a ``bench --out`` file."""
    where = f"--bench {path}"
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise InputError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # (JSONDecodeError is a ValueError, and so is an integer of over 4,300 digits; nesting
        # past the recursion limit is a RecursionError)
        raise InputError(f"{where}: not JSON ({str(exc)[:200]}); give the file `shadowdiff bench --out` "
                         "wrote") from None
    return checked(data, where, path.name)


def stored(settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bench figures stored with a run (None without), checked again: a store is data."""
    data = settings.get(SETTINGS_KEY)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InputError("the run's stored bench figures are not bench's; report with --bench FILE, which "
                         "overrides them")
    try:
        return checked(data, "the run's stored bench figures", str(data.get("file") or "bench"))
    except InputError as exc:
        raise InputError(f"{exc}; report with --bench FILE, which overrides them") from None


def checked(data: Any, where: str, name: str) -> dict[str, Any]:
    """``data`` as a run keeps bench figures; ``InputError`` for what bench never writes."""
    if not isinstance(data, dict) or not isinstance(data.get("ratios"), list):
        raise InputError(f"{where}: not a `shadowdiff bench --out` file (no list of ratios)")
    ratios = [_ratio(entry, f"{where}: ratio {i + 1}") for i, entry in enumerate(data["ratios"])]
    if not ratios:
        raise InputError(f"{where}: it has no ratio (the bench measured no level on both sides)")
    return {"file": name, "baseline": _side(data.get("baseline"), f"{where}: baseline"),
            "candidate": _side(data.get("candidate"), f"{where}: candidate"),
            "max_tokens": data.get("max_tokens") if _count(data.get("max_tokens")) else None,
            "ratios": ratios}


def _side(value: Any, where: str) -> dict[str, str | None]:
    if not isinstance(value, dict) or not isinstance(value.get("url"), str) or not value["url"].strip():
        raise InputError(f"{where}: no url")
    try:
        _where(value["url"])
    except ValueError as exc:
        raise InputError(f"{where}: url {value['url'][:200]!r} is not a URL ({exc})") from None
    model = value.get("model")
    return {"url": value["url"], "model": model if isinstance(model, str) else None}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _ratio(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict) or not _count(entry.get("concurrency")):
        raise InputError(f"{where}: no concurrency")
    rounds, errors = entry.get("rounds"), entry.get("errors", 0)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise InputError(f"{where}: no count of rounds")
    if not isinstance(errors, int) or isinstance(errors, bool) or errors < 0:
        raise InputError(f"{where}: errors {errors!r} is not a count")
    out: dict[str, Any] = {"concurrency": entry["concurrency"], "rounds": rounds, "errors": errors}
    for name in FIGURES:
        value, interval, verdict = entry.get(name), entry.get(f"{name}_interval"), entry.get(f"{name}_verdict")
        if value is not None and not _positive(value):
            raise InputError(f"{where}: {name} {value!r} is not a ratio")
        if interval is not None and not (isinstance(interval, list) and len(interval) == 2
                                         and all(_positive(v) for v in interval) and interval[0] <= interval[1]):
            raise InputError(f"{where}: {name}_interval {interval!r} is not an interval")
        if interval is not None and (value is None or not interval[0] <= value <= interval[1]):
            raise InputError(f"{where}: {name} {value} is not inside its interval {interval}")
        if interval is not None and rounds < MIN_ROUNDS:
            raise InputError(f"{where}: {name} has an interval over {rounds} rounds (bench gives none under "
                             f"{MIN_ROUNDS})")
        # the call must be the one bench makes of that interval: a file edited to say "faster" is refused
        expected = ERRORS if errors else call(interval, name == "tokens_per_second")
        if verdict != expected and not (verdict == UNEQUAL and not errors and name != "ttft_p50"):
            raise InputError(f"{where}: {name}_verdict {verdict!r} is not what bench says of "
                             f"{'its ' + str(errors) + ' errors' if errors else 'its interval ' + repr(interval)}")
        out[name], out[f"{name}_interval"], out[f"{name}_verdict"] = value, interval, verdict
    return out


def host(url: str) -> str:
    """A server's host as addresses compare: every loopback name as one."""
    name = (urlsplit(url.strip()).hostname or "").lower()
    return "127.0.0.1" if name in ("localhost", "::1") or name.startswith("127.") else name


def _where(url: str) -> str:
    """A server's address as two records of it compare: scheme, host and port, its path
    without ``/v1`` or a trailing slash."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    path = path[:-3] if path.endswith("/v1") else path
    return f"{parts.scheme.lower()}://{host(url)}:{parts.port or ''}{path}"


def other_servers(bench: Mapping[str, Any], sides: Mapping[str, Any]) -> list[str]:
    """Each side the bench measured at another address or model than the run's, in words."""
    if not sides:
        return ["this run records no servers (saved answers compared) to check the bench's against"]
    out = []
    for side in ("baseline", "candidate"):
        run = sides.get(side)
        run = run if isinstance(run, dict) else {"url": run}
        mine = bench.get(side) or {}
        if not run.get("url") or not mine.get("url"):
            continue
        try:
            apart = _where(str(run["url"])) != _where(str(mine["url"]))
        except ValueError:    # (a stored address that is no URL: not the bench's)
            apart = True
        if apart:
            out.append(f"the {side} at {mine['url']}, the run's at {run['url']}")
        elif run.get("model") and mine.get("model") and run["model"] != mine["model"]:
            out.append(f"the {side}'s model {mine['model']}, the run's {run['model']}")
    return out


def ratio_text(entry: Mapping[str, Any], name: str = "tokens_per_second", what: str = "") -> str:
    """"1.42x [1.39, 1.45] output tokens/s, faster": a ratio, its interval and bench's verdict."""
    value, interval = entry.get(name), entry.get(f"{name}_interval")
    if value is None:
        return "—"
    text = f"{value:.2f}x" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
    return f"{text}{' ' + what if what else ''}, {entry[f'{name}_verdict']}"
