"""The qwen3 reasoning parser's streaming engine, as vLLM 0.34 runs it behind its reasoning
adapter (``parser/engine/adapters.py``, which sets ``skip_tool_parsing``).

vLLM feeds it each delta's text and token ids. Its ``TokenIDScanner``
(``parser/engine/token_id_scanner.py``) splits a delta at the marker tokens
(``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>``, and the end-of-sequence
token, dropped), but when a stop string makes the detokenizer hold text back, a marker's
text is not in the delta its token came in: the scanner then defers the marker until its
whole text has arrived, and splits the text there. A token whose delta has no text is
not counted as a reasoning token. The ``IncrementalLexer`` (``incremental_lexer.py``)
holds back text that may be the start of one of the grammar's literals, and
``StreamingParserEngine`` (``streaming_parser_engine.py``) turns what they find into
reasoning, the end of reasoning, and content. This module ports that code for the
qwen3 grammar (``parser/qwen3.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shadowdiff.simulator.vocab import EOS_TOKEN, THINK_END, THINK_START, TOOL_CALL_END, TOOL_CALL_START, vocabulary

DROP = "__DROP__"
CONTENT = "__CONTENT__"

# qwen3_config's terminals (all literals), and the dropped special token
_LITERALS = {
    "THINK_START": THINK_START, "THINK_END": THINK_END, "TOOL_START": TOOL_CALL_START,
    "TOOL_END": TOOL_CALL_END, "FUNC_PREFIX": "<function=", "FUNC_END": "</function>",
    "PARAM_START": "<parameter=", "PARAM_END": "</parameter>", "CLOSE_ANGLE": ">", DROP: EOS_TOKEN,
}
_TOKEN_ID_TERMINALS = ("THINK_START", "THINK_END", "TOOL_START", "TOOL_END", DROP)


@dataclass
class TextChunk:
    text: str
    token_texts: tuple[str, ...] = ()
    token_count: int = 0


@dataclass
class Marker:
    """``PreLexedTerminal``."""

    terminal: str
    text: str


@dataclass
class Event:
    kind: str           # "reasoning", "content" or "end" (of reasoning)
    text: str = ""
    token_count: int = 0


class Scanner:
    """``TokenIDScanner``."""

    def __init__(self, terminals: dict[int, str], decode: Callable[[int], str]) -> None:
        self.terminals = terminals
        self.decode = decode
        self.deferred: list[Marker] = []
        self.deferred_counts: list[int] = []
        self.deferred_trailing = 0
        self.deferred_post_text = ""

    def scan(self, delta_text: str, token_ids: Sequence[int]) -> list[TextChunk | Marker]:
        prefix: list[TextChunk | Marker] = []
        effective = delta_text
        trailing = 0
        if self.deferred:
            prefix, effective, trailing = self._resolve_deferred(delta_text, len(token_ids))
        if not any(t in self.terminals for t in token_ids):
            if effective:
                texts = tuple(self.decode(t) for t in token_ids)
                prefix.append(TextChunk(effective, texts, (trailing if prefix else 0) + len(texts)))
            return prefix
        results: list[TextChunk | Marker] = []
        texts_acc: list[str] = []
        for token_id in token_ids:
            text = self.decode(token_id)
            terminal = self.terminals.get(token_id)
            if terminal is not None:
                if texts_acc and "".join(texts_acc):
                    results.append(TextChunk("".join(texts_acc), tuple(texts_acc), len(texts_acc)))
                texts_acc = []
                results.append(Marker(terminal, text))
            else:
                texts_acc.append(text)
        if texts_acc and "".join(texts_acc):
            results.append(TextChunk("".join(texts_acc), tuple(texts_acc), len(texts_acc)))
        if trailing:
            results.insert(0, TextChunk("", token_count=trailing))
        if effective:
            results = self._recover_holdback_text(effective, results)
        else:
            # no text to split at: defer the markers until their text arrives
            count = 0
            for r in results:
                if isinstance(r, TextChunk):
                    count += r.token_count
                else:
                    self.deferred.append(r)
                    self.deferred_counts.append(count)
                    count = 0
            self.deferred_trailing += count
            results = []
        return prefix + results

    def flush_pending(self) -> list[TextChunk | Marker]:
        if not self.deferred and not self.deferred_post_text:
            return []
        results: list[TextChunk | Marker] = []
        if self.deferred_post_text:
            count = self.deferred_counts[0] if self.deferred_counts else 0
            results.append(TextChunk(self.deferred_post_text, token_count=count))
            self.deferred_post_text = ""
        results.extend(self.deferred)
        if self.deferred_trailing:
            results.append(TextChunk("", token_count=self.deferred_trailing))
        self.deferred, self.deferred_counts, self.deferred_trailing = [], [], 0
        return results

    def _resolve_deferred(self, delta_text: str, current_count: int) -> tuple[list[TextChunk | Marker], str, int]:
        deferred, counts, trailing = self.deferred, self.deferred_counts, self.deferred_trailing
        self.deferred, self.deferred_counts, self.deferred_trailing = [], [], 0
        results: list[TextChunk | Marker] = []
        remaining = delta_text
        if self.deferred_post_text:
            remaining = self.deferred_post_text + remaining
            self.deferred_post_text = ""
        for marker, count in zip(deferred, counts, strict=True):
            pos = remaining.find(marker.text)
            if pos > 0:
                results += [TextChunk(remaining[:pos], token_count=count), marker]
                remaining = remaining[pos + len(marker.text):]
            elif pos == 0:
                results.append(marker)
                remaining = remaining[len(marker.text):]
            else:
                if remaining:
                    self.deferred_post_text += remaining
                    count += current_count
                    remaining = ""
                self.deferred.append(marker)
                self.deferred_counts.append(count)
        if self.deferred:
            self.deferred_trailing = trailing
            trailing = 0
        return results, remaining, trailing

    def _recover_holdback_text(self, delta_text: str, results: list[TextChunk | Marker]) -> list[TextChunk | Marker]:
        if not results:
            return [TextChunk(delta_text)]
        rebuilt = "".join(r.text for r in results)
        if not rebuilt:
            return [TextChunk(delta_text), *results]
        pos = delta_text.find(rebuilt)
        if pos > 0:
            return [TextChunk(delta_text[:pos]), *results]
        if pos == 0:
            return results
        return self._rebuild_from_anchors(delta_text, results)

    def _rebuild_from_anchors(self, delta_text: str, results: list[TextChunk | Marker]) -> list[TextChunk | Marker]:
        anchors = [r for r in results if isinstance(r, Marker)]
        if not anchors:
            return [TextChunk(delta_text)]
        groups: list[list[str]] = [[] for _ in range(len(anchors) + 1)]
        counts = [0] * (len(anchors) + 1)
        at = 0
        for r in results:
            if isinstance(r, Marker):
                at += 1
            else:
                groups[at].extend(r.token_texts)
                counts[at] += r.token_count
        positions = [-1] * len(anchors)
        end = len(delta_text)
        for i in range(len(anchors) - 1, -1, -1):
            pos = delta_text.rfind(anchors[i].text, 0, end)
            if pos >= 0:
                positions[i] = end = pos
        out: list[TextChunk | Marker] = []
        consumed = 0
        for i, anchor in enumerate(anchors):
            pos = positions[i]
            if pos >= consumed:
                if pos > consumed:
                    out.append(TextChunk(delta_text[consumed:pos], tuple(groups[i]), counts[i]))
                out.append(anchor)
                consumed = pos + len(anchor.text)
            else:
                later = any(p >= 0 for p in positions[i + 1:])
                if not later and consumed < len(delta_text) and anchor.terminal != DROP:
                    self.deferred_post_text += delta_text[consumed:]
                    consumed = len(delta_text)
                self.deferred.append(anchor)
                self.deferred_counts.append(counts[i])
        if consumed < len(delta_text):
            out.append(TextChunk(delta_text[consumed:], tuple(groups[-1]), counts[-1]))
        return out


@dataclass
class Lexer:
    """``IncrementalLexer`` for a grammar of literals: text that may begin a literal waits."""

    literals: dict[str, str]
    buffer: str = ""
    counts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.first = frozenset(lit[0] for lit in self.literals.values())
        self.prefixes = frozenset(lit[:i] for lit in self.literals.values() for i in range(1, len(lit)))
        self.by_first: dict[str, list[tuple[str, str]]] = {}
        for name, lit in self.literals.items():
            self.by_first.setdefault(lit[0], []).append((lit, name))

    def feed(self, text: str, token_texts: tuple[str, ...] = (), token_count: int = 0) -> list[tuple[str, str, int]]:
        counts = [0] * len(text)
        if text:
            if token_texts:
                pos = assigned = 0
                for token_text in token_texts:
                    if not token_text:
                        continue
                    found = text.find(token_text, pos)
                    if found < 0:
                        continue
                    counts[found] += 1
                    assigned += 1
                    pos = found + len(token_text)
                if token_count - assigned > 0:
                    counts[0] += token_count - assigned
            elif token_count:
                counts[0] = token_count
        if not self.buffer and self.first.isdisjoint(text):
            return [(CONTENT, text, sum(counts))]
        self.buffer += text
        self.counts += counts
        return self._drain()

    def flush(self) -> list[tuple[str, str, int]]:
        tokens: list[tuple[str, str, int]] = []
        if self.buffer:
            tokens += self._drain(final=True)
        if self.buffer:
            tokens.append((CONTENT, self.buffer, sum(self.counts)))
            self.buffer, self.counts = "", []
        return tokens

    def _pop(self, length: int) -> int:
        count = sum(self.counts[:length])
        del self.counts[:length]
        return count

    def _drain(self, *, final: bool = False) -> list[tuple[str, str, int]]:
        tokens: list[tuple[str, str, int]] = []
        while self.buffer:
            if self.first.isdisjoint(self.buffer):
                tokens.append((CONTENT, self.buffer, sum(self.counts)))
                self.buffer, self.counts = "", []
                break
            best: tuple[str, str] | None = None
            candidates = self.by_first.get(self.buffer[0], [])
            for lit, name in candidates:
                if self.buffer.startswith(lit) and (best is None or len(lit) > len(best[1])):
                    best = (name, lit)
            if self.buffer in self.prefixes and not final and (
                    best is None or any(len(lit) > len(best[1]) and lit.startswith(self.buffer)
                                        for lit, _ in candidates)):
                break
            if best is not None:
                tokens.append((best[0], best[1], self._pop(len(best[1]))))
                self.buffer = self.buffer[len(best[1]):]
            else:
                end = self._content_boundary()
                tokens.append((CONTENT, self.buffer[:end], self._pop(end)))
                self.buffer = self.buffer[end:]
        return tokens

    def _content_boundary(self) -> int:
        buf = self.buffer
        for i in range(1, len(buf)):
            if buf[i] in self.first:
                for lit in self.literals.values():
                    n = min(len(buf) - i, len(lit))
                    if buf[i:i + n] == lit[:n]:
                        return i
        return len(buf) or 1


class Qwen3Stream:
    """``StreamingParserEngine`` with qwen3's grammar, thinking on, started in reasoning,
    with ``skip_tool_parsing`` (the reasoning adapter's): the events of each delta."""

    def __init__(self) -> None:
        vocab = vocabulary()
        ids = {vocab.token_id(_LITERALS[name]): name for name in _TOKEN_ID_TERMINALS}
        self._ids = {i: n for i, n in ids.items() if i is not None}
        self.scanner = Scanner(self._ids, vocab.token_text)
        self.lexer = Lexer(dict(_LITERALS))
        self.reasoning = True               # the state: REASONING, else CONTENT
        self.reasoning_tokens = 0
        self._had_ids = False

    def feed(self, delta_text: str, token_ids: Sequence[int]) -> list[Event]:
        if token_ids:
            self._had_ids = True
        if (delta_text and not self.lexer.buffer and not self.scanner.deferred
                and self.lexer.first.isdisjoint(delta_text) and not any(t in self._ids for t in token_ids)):
            events = self._emit(delta_text, len(token_ids))
        else:
            items = self.scanner.scan(delta_text, token_ids)
            if len(items) == 1 and isinstance(items[0], TextChunk):
                item = items[0]
                tokens = self.lexer.feed(item.text, item.token_texts, item.token_count)
                if len(tokens) == 1 and tokens[0][0] == CONTENT:
                    events = self._emit(tokens[0][1], tokens[0][2])
                else:
                    events = self._lexed(tokens)
            else:
                events = self._items(items)
        self._record(events)
        return events

    def finish(self) -> list[Event]:
        events = self._items(self.scanner.flush_pending())
        events += self._lexed(self.lexer.flush())
        if self.reasoning:
            events.append(Event("end"))
            self.reasoning = False
        self._record(events)
        return events

    def _record(self, events: list[Event]) -> None:
        self.reasoning_tokens += sum(e.token_count for e in events if e.kind == "reasoning")

    def _items(self, items: Sequence[TextChunk | Marker]) -> list[Event]:
        events: list[Event] = []
        for item in items:
            if isinstance(item, Marker):
                events += self._lexed(self.lexer.flush())
                events += self._terminal(item.terminal, item.text)
            elif not item.text and item.token_count:
                events += self._emit("", item.token_count)
            else:
                events += self._lexed(self.lexer.feed(item.text, item.token_texts, item.token_count))
        return events

    def _lexed(self, tokens: list[tuple[str, str, int]]) -> list[Event]:
        events: list[Event] = []
        for terminal, text, count in tokens:
            if terminal == CONTENT or (self._had_ids and terminal in _TOKEN_ID_TERMINALS):
                if text:
                    events += self._emit(text, count)
            else:
                events += self._terminal(terminal, text, count)
        return events

    def _emit(self, text: str, count: int = 0) -> list[Event]:
        return [Event("reasoning" if self.reasoning else "content", text, count)]

    def _terminal(self, terminal: str, text: str, count: int = 0) -> list[Event]:
        """``_on_terminal`` with qwen3's transitions from REASONING and CONTENT."""
        if terminal == DROP:
            return []
        if terminal == "THINK_START":
            return [] if self.reasoning else self._emit(text, count)
        if terminal == "THINK_END":
            if self.reasoning:
                self.reasoning = False
                return [Event("end", text)]
            return []
        if terminal == "TOOL_START":
            # a tool call ends reasoning; skipped tool parsing keeps its text as content
            self.reasoning = False
            return [Event("end", text), Event("content", text)]
        if terminal == "FUNC_PREFIX" and not self.reasoning:
            return [Event("content", text)]   # a skipped tool opener: its text, uncounted
        return self._emit(text, count)
