"""Profiles: how a simulated deployment's answers differ from the baseline's.

A profile gives, for each kind of drift, the share of prompts whose answer shows it.
Which prompts drift, and how, is decided by a hash of the prompt (and the profile's
``drift_seed``), so the choice per prompt is stable across calls, processes and
machines, and raising a rate only moves more prompts into that kind.

Built-in profiles:

* ``baseline`` - no drift: the reference answer. Given a server ``--seed`` other
  than 0 it becomes a *replica*: a small share of prompts (``replica_rate``) flips at
  a near-tie, the way BF16 disagrees with itself under other batching.
* ``fp8`` - the drift mix of a well-behaved FP8 deployment: mostly identical or
  wording-only, a few formatting changes, and rare confident changes (a number, a
  repeated word, an off-topic item, an earlier stop; a number in the thinking, a tool
  argument, another tool). 1.5x faster; its ``quantization`` is ``fp8``.
* ``fp8-heavy`` - a badly broken quantization, for alerts that must fire.

The last three kinds change a part only some answers have: ``reasoning_number`` the
thinking of a reasoning model (its final answer stays the same), ``tool_argument`` and
``tool_name`` a tool call (``tool_name`` only where several tools are offered). A prompt
planned for one of them whose answer lacks that part is answered as the baseline's.

``token_flip_rate`` is for *teacher-forced scoring* (``teacher``): once another
model's answer has left this server's own greedy answer, the server follows that text
and prefers another token at a near-tie at this rate per answer token (0 for
``baseline``, 0.002 for ``fp8``, 0.01 for ``fp8-heavy``); a replica (server ``--seed``
other than 0) adds ``replica_token_flip_rate`` (0.0005). Before the first departure
there are none: the server's own greedy answer would have departed there.

Custom profiles come from a TOML file (``--profile-file``) or ``--drift KIND=RATE``
overrides::

    name = "int4"
    base = "fp8"          # start from a built-in
    speed = 2.0
    quantization = "awq"  # what the server's fingerprint is made from
    token_flip_rate = 0.004
    [rates]
    number = 0.10
    wording = 0.40
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from shadowdiff.errors import ProfileError


class DriftKind(StrEnum):
    """The ways a quantized model's greedy answer differs from its baseline's."""

    # Order matters: prompts are assigned by cumulative rate in this order, so the
    # rare, confident kinds come first and stay put when the wording rate changes.
    NUMBER = "number"            # a changed number: the "flipped fact"
    REPETITION = "repetition"    # a word said twice
    LIST_ITEM = "list_item"      # an off-topic item (or sentence) added
    EARLY_STOP = "early_stop"    # the answer stops at an earlier sentence
    FORMATTING = "formatting"    # whitespace and line breaks only
    WORDING = "wording"          # identical prefix, then synonyms and rephrasing
    # Parts beyond the text, after the text kinds so that adding them moved no prompt's
    # text drift (see the module docstring for where they apply).
    REASONING_NUMBER = "reasoning_number"   # a changed number in the thinking only
    TOOL_ARGUMENT = "tool_argument"         # a tool call's argument value changed
    TOOL_NAME = "tool_name"                 # another of the offered tools called

    @property
    def in_text(self) -> bool:
        """True for the kinds that change the answer's text; the others change its
        thinking or its tool calls."""
        return self not in (DriftKind.REASONING_NUMBER, DriftKind.TOOL_ARGUMENT, DriftKind.TOOL_NAME)

    @property
    def confident(self) -> bool:
        """True for changes a model makes with a large top-1 margin."""
        return self not in (DriftKind.WORDING, DriftKind.FORMATTING)


@dataclass(frozen=True)
class Profile:
    """Drift rates per kind, plus the speed of the deployment it models."""

    name: str
    rates: Mapping[DriftKind, float] = field(default_factory=lambda: MappingProxyType({}))
    speed: float = 1.0
    replica_rate: float = 0.03
    drift_seed: int = 0
    quantization: str | None = None     # as vLLM's --quantization; None: the checkpoint's dtype
    # per answer token, after a scored answer left this server's own (see the docstring)
    token_flip_rate: float = 0.0
    replica_token_flip_rate: float = 0.0005

    def __post_init__(self) -> None:
        for kind, rate in self.rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ProfileError(f"drift rate for {kind} must be within 0..1, got {rate}")
        if sum(self.rates.values()) > 1.0 + 1e-9:
            raise ProfileError(
                f"profile {self.name!r}: drift rates add up to {sum(self.rates.values()):.3f}; "
                "they are shares of prompts and must add up to at most 1"
            )
        if self.speed <= 0:
            raise ProfileError(f"profile {self.name!r}: speed must be positive, got {self.speed}")
        for name in ("replica_rate", "token_flip_rate", "replica_token_flip_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ProfileError(f"{name} must be within 0..1, got {value}")

    def rate(self, kind: DriftKind) -> float:
        return self.rates.get(kind, 0.0)

    def kind_for(self, u: float) -> DriftKind | None:
        """The drift kind for a prompt whose hash maps to ``u`` in [0, 1)."""
        edge = 0.0
        for kind in DriftKind:
            edge += self.rate(kind)
            if u < edge:
                return kind
        return None

    def flip_rate(self, seed: int) -> float:
        """The per-token rate of near-tie disagreements after a departure, for a server
        started with ``--seed seed`` (a seed other than 0 adds the replica's)."""
        return self.token_flip_rate + (self.replica_token_flip_rate if seed != 0 else 0.0)

    def with_rates(self, overrides: Mapping[DriftKind, float]) -> Profile:
        return replace(self, rates=MappingProxyType({**self.rates, **overrides}))


def _rates(**rates: float) -> Mapping[DriftKind, float]:
    return MappingProxyType({DriftKind(k): v for k, v in rates.items()})


BUILTIN: Mapping[str, Profile] = MappingProxyType({
    "baseline": Profile("baseline"),
    "fp8": Profile(
        "fp8",
        _rates(number=0.04, repetition=0.03, list_item=0.03, early_stop=0.05,
               formatting=0.08, wording=0.32, reasoning_number=0.03, tool_argument=0.03,
               tool_name=0.02),
        speed=1.5, quantization="fp8", token_flip_rate=0.002,
    ),
    "fp8-heavy": Profile(
        "fp8-heavy",
        _rates(number=0.15, repetition=0.10, list_item=0.10, early_stop=0.10,
               formatting=0.05, wording=0.40),
        speed=1.5, quantization="fp8", token_flip_rate=0.01,
    ),
})


def builtin(name: str) -> Profile:
    try:
        return BUILTIN[name]
    except KeyError:
        raise ProfileError(
            f"unknown profile {name!r}; built-in profiles are {', '.join(BUILTIN)} "
            "(or give --profile-file)"
        ) from None


def parse_drift(spec: str) -> tuple[DriftKind, float]:
    """Parse a ``KIND=RATE`` override such as ``number=0.1``."""
    kind, sep, rate = spec.partition("=")
    if not sep:
        raise ProfileError(f"--drift expects KIND=RATE, got {spec!r}")
    try:
        return DriftKind(kind.strip()), float(rate)
    except ValueError:
        kinds = ", ".join(k.value for k in DriftKind)
        raise ProfileError(
            f"--drift {spec!r}: kind must be one of {kinds} and rate a number"
        ) from None


def load(path: Path) -> Profile:
    """Read a profile from a TOML file (see the module docstring for the format)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"cannot read profile file {path}: {exc}") from exc
    unknown = set(data) - {"name", "base", "speed", "replica_rate", "drift_seed", "quantization", "rates",
                           "token_flip_rate", "replica_token_flip_rate"}
    if unknown:
        raise ProfileError(f"{path}: unknown keys {sorted(unknown)}")
    base = builtin(str(data.get("base", "baseline")))
    try:
        overrides = {DriftKind(k): float(v) for k, v in dict(data.get("rates", {})).items()}
        profile = replace(
            base.with_rates(overrides),
            name=str(data.get("name", path.stem)),
            speed=float(data.get("speed", base.speed)),
            replica_rate=float(data.get("replica_rate", base.replica_rate)),
            drift_seed=int(data.get("drift_seed", base.drift_seed)),
            quantization=str(data["quantization"]) if "quantization" in data else base.quantization,
            token_flip_rate=float(data.get("token_flip_rate", base.token_flip_rate)),
            replica_token_flip_rate=float(data.get("replica_token_flip_rate", base.replica_token_flip_rate)),
        )
    except (TypeError, ValueError) as exc:
        raise ProfileError(f"{path}: {exc}") from exc
    return profile
