"""The gates of a verdict: the thresholds ``report`` and ``replay --gate`` decide with,
kept with the run so that both decide alike.

A gate given to ``replay`` is stored in the run's settings (``gates``); ``report`` on that
run applies it, and a flag given to ``report`` overrides it for that report. Every gate
of a verdict says where its value came from: given to this command, from the run (and
which command set it), or the default. Without that, ``replay --max-flips 0 --gate``
would FAIL a run that ``report`` then PASSes with the same pairs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shadowdiff.errors import ConfigError

# The fewest comparable pairs a PASS stands on by default. With n pairs and not one changed,
# the candidate may still change up to 1 - 0.05 ** (1 / n) of its answers (the exact
# one-sided 95 % bound): 9.5 % at 30, 63 % at 3. A handful of pairs proves nothing.
MIN_COMPARED = 30
# The share of comparable pairs that may stop at the token cap on both sides (compared on
# what came before the cap only) and the run still pass: not most of them.
MAX_CAPPED = 0.5


@dataclass(frozen=True)
class Gate:
    name: str                  # the key in the run's settings and in ``Acceptance.thresholds``
    flag: str
    default: float | int | None   # None: no gate unless given
    integer: bool
    low: float                 # the smallest value allowed
    high: float | None         # the largest (None: no bound)
    words: str                 # what it is, for "max flips 0 (default)"
    switch: bool = False       # a flag, on (1) or off (0), not a number
    unit: str = ""             # "%": a share of pairs or tokens; "points": a difference of two shares

    def check(self, value: Any, where: str) -> float | int:
        """``value`` as this gate takes it; ``ConfigError`` for anything else (a run's
        settings are data, and a hand-edited store must not slip a string past the gate)."""
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and value >= self.low and (self.high is None or value <= self.high) \
            and (not self.integer or float(value).is_integer())
        if not ok:
            raise ConfigError(f"{where}: {self.flag} {value!r} is not a gate {self.flag} takes; report with "
                              f"{self.flag} given, which overrides it")
        return int(value) if self.integer else float(value)

    def show(self, value: float | int | None) -> str:
        """The value in the flag's own terms (``0.9``, not ``90 %``), as it would be typed."""
        if value is None or (self.switch and not value):
            return "off"
        if self.switch:
            return "on"
        return f"{value:g}" if not self.integer else str(int(value))

    def shown_as_share(self, value: float | int | None) -> str:
        """``show``, and beside a share what it is in the report's terms: "1 = 100 %" (not "1",
        as if one pair), and beside a difference of shares its percentage points, as the
        verdict says them ("0.001 = 0.1 points", not "0.1 %", which would read as relative)."""
        shown = self.show(value)
        if value is None or not self.unit:
            return shown
        points = f"{value * 100:.6g}"
        return f"{shown} = {points} {'point' if self.unit == 'points' and points == '1' else self.unit}"


GATES = (
    Gate("min_reviewed", "--min-reviewed", 1.0, False, 0.0, 1.0, "min reviewed", unit="%"),
    Gate("max_errors", "--max-errors", 0, True, 0, None, "max errors"),
    Gate("min_compared", "--min-compared", MIN_COMPARED, True, 1, None, "min compared"),
    Gate("max_excess_divergence", "--max-excess-divergence", None, False, 0.0, 1.0, "max excess divergence",
         unit="points"),
    Gate("max_factual_rate", "--max-factual-rate", None, False, 0.0, 1.0, "max factual rate", unit="%"),
    Gate("max_flips", "--max-flips", None, True, 0, None, "max flips"),
    Gate("max_token_disagreement", "--max-token-disagreement", None, False, 0.0, 1.0, "max token disagreement",
         unit="points"),
    Gate("min_token_agreement", "--min-token-agreement", None, False, 0.0, 1.0, "min token agreement", unit="%"),
    Gate("max_kl", "--max-kl", None, False, 0.0, None, "max KL per token"),
    Gate("max_capped", "--max-capped", MAX_CAPPED, False, 0.0, 1.0, "max capped", unit="%"),
    Gate("without_review", "--without-review", 0, True, 0, 1, "without review", switch=True),
)
BY_NAME = {gate.name: gate for gate in GATES}
SETTINGS_KEY = "gates"   # in the run's settings: {"by": "replay", "given": {name: value}}

DEFAULT, GIVEN, FROM_RUN, OVERRIDDEN = "default", "given", "from the run", "given, over the run's"


@dataclass(frozen=True)
class Resolved:
    """One gate of a verdict: its value and where the value came from."""

    gate: Gate
    value: float | int | None
    source: str                            # DEFAULT, GIVEN, FROM_RUN or OVERRIDDEN
    command: str                           # the command it was given to (GIVEN, OVERRIDDEN) or that stored it
    stored: float | int | None = None      # the run's value that a flag overrode (OVERRIDDEN)
    first: float | int | None = None       # FROM_RUN: the value the run began with, when a --resume changed it
    waived: bool = False                   # not applied: --min-reviewed under --without-review

    def text(self) -> str:
        """"max flips 0 (from the run: replay --max-flips 0)"; "min reviewed 1 = 100 % (default)"."""
        value = self.gate.show(self.value)
        if self.source == GIVEN:
            where = f"given to {self.command}"
        elif self.source == FROM_RUN:
            where = f"from the run: {self.command} {self.gate.flag}" + ("" if self.gate.switch else f" {value}")
            if self.first is not None:
                where += f", changed by a resume from the {self.gate.flag} {self.gate.show(self.first)} it began with"
        elif self.source == OVERRIDDEN:
            where = f"given to {self.command}, over the run's {self.gate.flag} {self.gate.show(self.stored)}"
        else:
            where = "default"
        waived = "; not applied: --without-review" if self.waived else ""
        return f"{self.gate.words} {self.gate.shown_as_share(self.value)} ({where}{waived})"

    def as_json(self) -> dict[str, Any]:
        return {"flag": self.gate.flag, "value": self.value, "source": self.source,
                # (a default was given by no command: none is named, so that the report made by
                # replay and the one report makes again of the same run are the same)
                **({} if self.source == DEFAULT else {"command": self.command}),
                **({"stored": self.stored} if self.source == OVERRIDDEN else {}),
                **({"first": self.first} if self.first is not None else {}),
                **({"waived": True} if self.waived else {}), "text": self.text()}


@dataclass(frozen=True)
class Gates:
    """Every gate of a verdict, resolved."""

    resolved: tuple[Resolved, ...]

    def value(self, name: str) -> Any:
        return next(r.value for r in self.resolved if r.gate.name == name)

    def as_json(self) -> dict[str, Any]:
        return {r.gate.name: r.as_json() for r in self.resolved}

    def given_to(self, command: str) -> list[str]:
        """The flags given to ``command`` (not stored with the run), as they would be typed again:
        a command the report suggests must decide as this one did."""
        flags: list[str] = []
        for r in self.resolved:
            if r.source in (GIVEN, OVERRIDDEN) and r.command == command:
                flags += ([r.gate.flag if r.value else "--with-review"] if r.gate.switch
                          else [r.gate.flag, r.gate.show(r.value)])
        return flags


def switch(value: bool | None) -> int | None:
    """A switch gate's flag as the gate takes it: 1 on, 0 off, None not given."""
    return None if value is None else int(value)


def given(**values: Any) -> dict[str, Any]:
    """The gates a command was given (its options left at None were not)."""
    unknown = set(values) - set(BY_NAME)
    if unknown:
        raise ValueError(f"not gates: {sorted(unknown)}")
    if values.get("without_review") and values.get("min_reviewed") is not None:
        raise ConfigError("--without-review asks for no review, and --min-reviewed for some: give one of them")
    return {name: value for name, value in values.items() if value is not None}


def stored(settings: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The gates stored with a run (from its settings), and the command that gave them."""
    record = settings.get(SETTINGS_KEY) or {}
    if not isinstance(record, Mapping):
        raise ConfigError(f"the run's stored gates are not a table ({record!r}); report with every gate given")
    by = str(record.get("by") or "replay")
    values = record.get("given") or {}
    if not isinstance(values, Mapping):
        raise ConfigError(f"the run's stored gates are not a table ({values!r}); report with every gate given")
    # a gate this version does not know (a newer shadowdiff's) cannot be applied: say so
    unknown = sorted(set(values) - set(BY_NAME))
    if unknown:
        raise ConfigError(f"the run was given gates this shadowdiff does not know ({', '.join(unknown)}): "
                          "report on it with the shadowdiff that made it")
    return {name: BY_NAME[name].check(v, "the run's stored gates") for name, v in values.items()}, by


def to_store(settings: Mapping[str, Any], now: Mapping[str, Any], command: str) -> dict[str, Any]:
    """The run's gates record (``settings``: the run's) once ``command`` was given ``now``,
    over the gates given earlier: a --resume without a flag keeps the run's gate, so that
    leaving a flag out never drops a gate; a flag given again replaces it."""
    before, _ = stored(settings)
    given = {**before, **{name: BY_NAME[name].check(v, command) for name, v in now.items()}}
    # the value each gate began with, once a resume changed it: no report hides the change
    first = dict(_first(settings))
    for name, value in before.items():
        if given[name] != value:
            first.setdefault(name, value)
    return {"by": command, "given": given, **({"first": first} if first else {})}


def _first(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The values the run's gates began with, for those a resume changed (``to_store``)."""
    record = settings.get(SETTINGS_KEY) or {}
    first = record.get("first") if isinstance(record, Mapping) else None
    if not isinstance(first, Mapping):
        return {}
    return {name: BY_NAME[name].check(v, "the run's stored gates") for name, v in first.items() if name in BY_NAME}


def resolve(settings: Mapping[str, Any], now: Mapping[str, Any], command: str) -> Gates:
    """Each gate's value: given to ``command`` now, else the run's, else the default. A
    ``--min-reviewed`` given asks for reviews: over a run's stored ``--without-review``, it
    turns that off (given, as ``--with-review`` would)."""
    kept, by = stored(settings)
    began = _first(settings)
    if "min_reviewed" in now and "without_review" not in now and kept.get("without_review"):
        now = {**now, "without_review": 0}
    out = []
    for gate in GATES:
        if gate.name in now:
            value = gate.check(now[gate.name], command)
            if gate.name in kept and kept[gate.name] != value:
                out.append(Resolved(gate, value, OVERRIDDEN, command, kept[gate.name]))
            else:
                out.append(Resolved(gate, value, GIVEN, command))
        elif gate.name in kept:
            out.append(Resolved(gate, kept[gate.name], FROM_RUN, by, first=began.get(gate.name)))
        else:
            out.append(Resolved(gate, gate.default, DEFAULT, command))
    if any(r.gate.name == "without_review" and r.value for r in out):
        out = [dataclasses.replace(r, waived=True) if r.gate.name == "min_reviewed" else r for r in out]
    return Gates(tuple(out))
