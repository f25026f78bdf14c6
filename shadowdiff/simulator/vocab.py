"""A small, fixed, invertible tokenizer for the simulator.

Real vLLM counts tokens with the model's tokenizer; the simulator needs one that is
deterministic, needs no files, round-trips (``/tokenize`` then ``/detokenize``), and
splits text the way byte-level BPE tokenizers roughly do: whole common words with
their leading space, single digits (as Qwen and Llama 3 split numbers), punctuation
runs, and short fragments for unknown words, with UTF-8 byte tokens as the last
resort. Ids are stable across processes because the vocabulary is built in a fixed
order from ``lexicon`` (sets sorted first): another server process reads a server's
token ids, as teacher-forced scoring does. Special and added tokens are split off
first, as Hugging Face tokenizers do, so ``<|im_end|>`` is one token after punctuation
too.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from dataclasses import dataclass

from shadowdiff.simulator import lexicon

BYTE_TOKENS = 256
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
EOS_TOKEN = "<|im_end|>"
# Qwen3's added tokens for thinking and tool calls: whole tokens, as in its tokenizer, but
# not special (a decode keeps them, as vLLM's detokenizer does). They come last, so that
# adding them moved no other token's id.
THINK_START, THINK_END = "<think>", "</think>"
TOOL_CALL_START, TOOL_CALL_END = "<tool_call>", "</tool_call>"
ADDED_TOKENS = (THINK_START, THINK_END, TOOL_CALL_START, TOOL_CALL_END, "<tool_response>", "</tool_response>")

# Pre-tokenization in the spirit of GPT-style regexes: special tokens, words with an
# optional leading space, one digit at a time, punctuation runs, newlines, spaces.
_PIECE = re.compile(
    r"<\|[a-z_]+\|>|</?(?:think|tool_call|tool_response)>"
    r"| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\n+|[ \t]+(?![^\s])|[ \t]+"
)
# Special and added tokens are split off before the pieces, as Hugging Face tokenizers
# split off their added tokens first: "done.</think>" is "done", ".", "</think>", never a
# punctuation run "." + "</" swallowing the marker.
_ADDED = re.compile("(" + "|".join(re.escape(t) for t in (*SPECIAL_TOKENS, *ADDED_TOKENS)) + ")")


def _pieces() -> list[str]:
    """Every string token of the vocabulary, in id order (after bytes and specials)."""
    words: list[str] = []
    seen: set[str] = set()

    def add(token: str) -> None:
        if token not in seen:
            seen.add(token)
            words.append(token)

    for ch in string.printable:
        if ch not in "\r\x0b\x0c":
            add(ch)
            if ch not in string.whitespace:
                add(" " + ch)
    for ch in lexicon.NON_ASCII:
        add(ch)
        add(" " + ch)
    for run in ("\n\n", "\n\n\n", "  ", "   ", "    ", "**", " **", "```", "\n```",
                ".\n", ".\n\n", ":\n", ",\"", "\",", "\":", " \"", "\"\n", "{\n", "}\n"):
        add(run)
    known = itertools.chain(
        lexicon.ADJECTIVES, lexicon.NOUNS, (v for pair in lexicon.VERBS for v in pair),
        lexicon.UNITS, lexicon.TIME_UNITS, lexicon.SYNONYMS,
        (w for group in lexicon.SYNONYMS.values() for w in group),
        (w.strip(",.") for phrase in lexicon.CONNECTORS for w in phrase.split()),
        (w.strip(",.") for s in lexicon.OFF_TOPIC + lexicon.CONTINUATION for w in s.split()),
        sorted(lexicon.STOPWORDS), lexicon.COMMON_WORDS,   # a frozenset: its order varies by process
        _CODE_WORDS,
    )
    for word in known:
        for form in (word, word.capitalize()):
            add(form)
            add(" " + form)
    letters = string.ascii_lowercase
    for size in (2, 3):
        for combo in itertools.product(letters, repeat=size):
            fragment = "".join(combo)
            for form in (fragment, fragment.capitalize()):
                add(form)
                add(" " + form)
    return words


_CODE_WORDS = (
    "def", "return", "import", "for", "while", "print", "len", "str", "int", "range",
    "items", "item", "total", "result", "value", "values", "const", "function", "let",
    "SELECT", "FROM", "WHERE", "GROUP", "ORDER", "BY", "COUNT", "python", "javascript",
    "sql", "json", "true", "false", "null", "None", "True", "False", "self", "class",
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a text: its id and the exact text it stands for."""

    id: int
    text: str


class Vocabulary:
    """Maps text to token ids and back; see the module docstring."""

    def __init__(self) -> None:
        pieces = _pieces()
        self._by_id: list[str] = [f"<0x{b:02X}>" for b in range(BYTE_TOKENS)]
        self._by_id.extend(SPECIAL_TOKENS)
        self._by_id.extend(pieces)
        self._by_id.extend(ADDED_TOKENS)
        self._ids: dict[str, int] = {
            text: i for i, text in enumerate(self._by_id) if i >= BYTE_TOKENS
        }
        self._longest = max(len(p) for p in pieces)
        self.eos_id = self._ids[EOS_TOKEN]

    @property
    def size(self) -> int:
        return len(self._by_id)

    def token_id(self, text: str) -> int | None:
        """The id of ``text`` if it is a single token, else None."""
        return self._ids.get(text)

    def encode(self, text: str) -> list[Token]:
        """Split ``text`` into tokens whose texts join back to ``text`` exactly."""
        tokens: list[Token] = []
        for part in _ADDED.split(text):
            for match in _PIECE.finditer(part):
                tokens.extend(self._encode_piece(match.group()))
        return tokens

    def _encode_piece(self, piece: str) -> list[Token]:
        known = self._ids.get(piece)
        if known is not None:
            return [Token(known, piece)]
        out: list[Token] = []
        start = 0
        while start < len(piece):
            for end in range(min(len(piece), start + self._longest), start, -1):
                token_id = self._ids.get(piece[start:end])
                if token_id is not None:
                    out.append(Token(token_id, piece[start:end]))
                    start = end
                    break
            else:
                # No string token covers this character: fall back to its UTF-8 bytes.
                # Their texts are left empty except the last, which carries the whole
                # character, so token texts still join to the original string.
                char = piece[start]
                raw = char.encode()
                for i, byte in enumerate(raw):
                    out.append(Token(byte, char if i == len(raw) - 1 else ""))
                start += 1
        return out

    def ids(self, text: str) -> list[int]:
        return [t.id for t in self.encode(text)]

    def decode(self, ids: list[int], *, skip_special: bool = True) -> str:
        """The text of ``ids``; raises IndexError for an id outside the vocabulary."""
        buffer = bytearray()
        for token_id in ids:
            if token_id < 0:
                raise IndexError(token_id)
            if token_id < BYTE_TOKENS:
                buffer.append(token_id)
                continue
            text = self._by_id[token_id]
            if skip_special and text in SPECIAL_TOKENS:
                continue
            buffer.extend(text.encode())
        return buffer.decode("utf-8", errors="replace")

    def token_text(self, token_id: int) -> str:
        return self._by_id[token_id]


@functools.cache
def vocabulary() -> Vocabulary:
    """The process-wide vocabulary, built on first use (about 50 ms)."""
    return Vocabulary()
