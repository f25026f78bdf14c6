"""Tool calls: what a chat request offers, and the calls the simulated model writes.

A request's ``tools`` and ``tool_choice`` become a ``ToolRequest``. Whether the model
calls a tool, which one, how many at once and with which arguments is decided from the
prompt's hash, so the same request always gets the same calls (only their ids are
random, as in vLLM). Arguments are built from each tool's JSON schema ``parameters``:
an enum picks one of its values, numbers and strings get plausible values (a city for a
``city``, a date for a ``date``...). The model writes the calls the way Qwen3 and Hermes
models do, and vLLM's ``hermes`` parser reads them::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
    </tool_call>

``change_argument`` and ``change_tool`` are the FP8 profile's tool drift: one argument
value changed, or another of the offered tools called.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.simulator import lexicon
from shadowdiff.simulator.hashing import mix, unit
from shadowdiff.simulator.vocab import TOOL_CALL_END, TOOL_CALL_START

CALL_SHARE = 0.75        # of prompts offered tools with tool_choice "auto" that call one
PARALLEL_SHARE = 0.3     # of calling prompts that call two tools at once (if allowed)
_SALT_CALL, _SALT_PARALLEL, _SALT_PICK, _SALT_ARGS = 31, 37, 41, 43
_CITIES = ("Paris", "London", "Tokyo", "Berlin", "Madrid", "Toronto", "Sydney", "Lisbon", "Oslo", "Prague")
_NAMES = ("Alex Morgan", "Sam Lee", "Maria Garcia", "Chen Wei", "Priya Patel", "Tom Becker")
_WORDS = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Tool:
    """One offered function: its name, description and JSON schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Tool:
        """From a request's ``{"type": "function", "function": {...}}`` entry."""
        function = spec.get("function") or {}
        parameters = function.get("parameters")
        return cls(str(function.get("name", "")), str(function.get("description") or ""),
                   parameters if isinstance(parameters, Mapping) else {})


@dataclass(frozen=True)
class ToolRequest:
    """What a chat request asks of tools (after vLLM's defaults: ``auto`` with tools)."""

    tools: tuple[Tool, ...]
    choice: str                 # "none", "auto", "required" or "named"
    named: str | None = None    # the function a named tool_choice forces
    parallel: bool = True       # parallel_tool_calls is not false
    answered: bool = False      # the conversation ends with a tool's result

    @property
    def forced(self) -> bool:
        return self.choice in ("required", "named")


@dataclass(frozen=True)
class Call:
    """One call the model writes: a function name and its arguments."""

    name: str
    arguments: Mapping[str, Any]

    def text(self) -> str:
        # json.dumps with its default separators, as Qwen3 writes them: vLLM streams these
        # bytes as the argument fragments and re-serializes them the same way for a body.
        body = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        return f"{TOOL_CALL_START}\n{body}\n{TOOL_CALL_END}"


def raw_calls(calls: Sequence[Call]) -> str:
    """The model's text for ``calls``: one ``<tool_call>`` block a call, a newline between."""
    return "\n".join(call.text() for call in calls)


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ").lower()))


def _ranked(request: ToolRequest, subject: str, key: int) -> list[Tool]:
    """The offered tools, the best match for the question first (ties broken by hash)."""
    asked = _words(subject) - lexicon.STOPWORDS

    def score(item: tuple[int, Tool]) -> tuple[int, float]:
        index, tool = item
        return (-len(asked & _words(f"{tool.name} {tool.description}")), unit(key, _SALT_PICK, index))

    return [tool for _, tool in sorted(enumerate(request.tools), key=score)]


def decide(request: ToolRequest | None, subject: str, key: int) -> list[Call] | None:
    """The calls the model makes for this prompt, or None for an answer in text."""
    if request is None or not request.tools or request.choice == "none":
        return None
    if request.choice == "named":
        tool = next(t for t in request.tools if t.name == request.named)
        return [Call(tool.name, arguments(tool, subject, key, 0))]
    if not request.forced and (request.answered or unit(key, _SALT_CALL) >= CALL_SHARE):
        return None
    ranked = _ranked(request, subject, key)
    chosen = ranked[:1]
    if request.parallel and unit(key, _SALT_PARALLEL) < PARALLEL_SHARE:
        chosen.append(ranked[1] if len(ranked) > 1 else ranked[0])
    return [Call(tool.name, arguments(tool, subject, key, i)) for i, tool in enumerate(chosen)]


# -- arguments from a JSON schema ----------------------------------------------------------


def arguments(tool: Tool, subject: str, key: int, index: int) -> dict[str, Any]:
    """Arguments for ``tool``: every required property, and some optional ones."""
    rng = random.Random(mix(key, _SALT_ARGS, index))
    value = _value(tool.parameters or {"type": "object"}, "", rng, _topics(subject))
    return value if isinstance(value, dict) else {}


def _topics(subject: str) -> list[str]:
    found = [w for w in _WORDS.findall(subject.lower()) if len(w) >= 4 and w not in lexicon.STOPWORDS]
    return found[:3] or ["overview"]


_DEPTH = 12   # the deepest object or array the model writes; deeper schemas get {} or []
# Makes a value of one JSON schema type from (schema, name, rng, topics, depth).
_Maker = Callable[[Mapping[str, Any], str, random.Random, list[str], int], Any]


def _value(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str],
           depth: int = 0) -> Any:
    """A value for ``schema``: total, whatever the schema holds (vLLM accepts any dict as
    ``parameters``), so odd bounds, types or nesting still give valid JSON arguments."""
    option = _first_option(schema) if depth < _DEPTH else None
    if option is not None:
        return _value(option, name, rng, topics, depth + 1)
    enum = schema.get("enum")
    plain = [v for v in enum if _plain(v)] if isinstance(enum, list) else []
    if plain:
        return rng.choice(plain)
    make: _Maker = _BY_TYPE.get(_type(schema), _string)
    return make(schema, name, rng, topics, depth)


def _first_option(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first schema of an ``anyOf`` list, else of a ``oneOf`` list (the model picks it)."""
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            return options[0]
    return None


def _type(schema: Mapping[str, Any]) -> str:
    """The schema's ``type``: the first that is not ``"null"`` of a list; a string if unsaid
    (or if it is not a name at all)."""
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return kind if isinstance(kind, str) else "string"


def _object(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str],
            depth: int) -> dict[str, Any]:
    """Every required property (all of them if ``required`` is not a list), half the others."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or depth >= _DEPTH:
        return {}
    required = schema.get("required")
    wanted = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set(properties)
    return {prop: _value(sub if isinstance(sub, Mapping) else {}, prop, rng, topics, depth + 1)
            for prop, sub in properties.items() if prop in wanted or rng.random() < 0.5}


def _array(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> list[Any]:
    if depth >= _DEPTH:
        return []
    items = schema.get("items")
    return [_value(items if isinstance(items, Mapping) else {}, name, rng, topics, depth + 1)
            for _ in range(rng.randint(1, 3))]


def _integer(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> int:
    least = math.ceil(_bound(schema.get("minimum"), 1))
    most = math.floor(_bound(schema.get("maximum"), max(100, least)))
    return rng.randint(least, max(least, most))


def _number(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> float:
    bottom = _bound(schema.get("minimum"), 0.0)
    top = max(bottom, _bound(schema.get("maximum"), max(100.0, bottom)))
    value = round(bottom + (top - bottom) * rng.random(), 1) if top - bottom < 1e300 else bottom
    return value if math.isfinite(value) else bottom


def _boolean(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> bool:
    return rng.random() < 0.5


def _null(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> None:
    return None


def _string(schema: Mapping[str, Any], name: str, rng: random.Random, topics: list[str], depth: int) -> str:
    """A plausible value for the property's name (a date, a city, an email, a person), else topic words."""
    lowered = name.lower()
    if schema.get("format") == "date" or "date" in lowered:
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if any(w in lowered for w in ("city", "location", "place", "destination", "origin")):
        return rng.choice(_CITIES)
    if "email" in lowered:
        return f"{rng.choice(topics)}@example.com"
    if lowered in ("name", "full_name", "person", "user", "username"):
        return rng.choice(_NAMES)
    return " ".join(rng.sample(topics, min(len(topics), rng.randint(1, 2))))


# The maker of a value for each JSON schema type; strings and types not listed get _string.
_BY_TYPE: dict[str, _Maker] = {
    "object": _object, "array": _array, "integer": _integer, "number": _number,
    "boolean": _boolean, "null": _null,
}


def _bound(value: Any, default: float) -> float:
    """A schema's ``minimum``/``maximum`` if it is a finite number, else ``default``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return default


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether json.dumps writes ``value`` as valid JSON without deep recursion."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return depth < _DEPTH and all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return depth < _DEPTH and all(_plain(v, depth + 1) for v in value.values())
    return True


# -- the FP8 profile's tool drift ---------------------------------------------------------------


def change_argument(calls: Sequence[Call], tools: Sequence[Tool], rng: random.Random) -> list[Call] | None:
    """``calls`` with one argument value of one call changed, or None if none can change."""
    schemas = {tool.name: tool.parameters for tool in tools}
    for index in rng.sample(range(len(calls)), len(calls)):
        call = calls[index]
        properties = (schemas.get(call.name) or {}).get("properties") or {}
        for prop in rng.sample(sorted(call.arguments), len(call.arguments)):
            old = call.arguments[prop]
            sub = properties.get(prop) if isinstance(properties, Mapping) else None
            new = _other_value(old, sub if isinstance(sub, Mapping) else {}, prop, rng)
            if new is not None and new != old:
                changed = Call(call.name, {**call.arguments, prop: new})
                return [*calls[:index], changed, *calls[index + 1:]]
    return None


def _other_value(old: Any, schema: Mapping[str, Any], name: str, rng: random.Random) -> Any:
    enum = schema.get("enum")
    if isinstance(enum, list):
        others = [v for v in enum if v != old and _plain(v)]
        return rng.choice(others) if others else None
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return old + rng.choice((1, 2, 9, 10))
    if isinstance(old, float):
        return round(old + rng.choice((0.5, 1.0, 9.0)), 1)
    if isinstance(old, str):
        pool = [c for c in _CITIES if c != old] if old in _CITIES else None
        if pool:
            return rng.choice(pool)
        digits = re.search(r"\d(?=\D*$)", old)
        if digits:   # a date or a code: its last digit changes
            at = digits.start()
            return old[:at] + str((int(old[at]) + rng.choice((1, 2, 9))) % 10) + old[at + 1:]
        return f"{old} {rng.choice(lexicon.NOUNS)}"
    return None


def change_tool(calls: Sequence[Call], request: ToolRequest, subject: str, key: int,
                rng: random.Random) -> list[Call] | None:
    """``calls`` with the first call made to another of the offered tools, or None."""
    if request.choice == "named":
        return None
    others = [tool for tool in request.tools if tool.name != calls[0].name]
    if not others:
        return None
    tool = rng.choice(others)
    return [Call(tool.name, arguments(tool, subject, key, 0)), *calls[1:]]
