"""Redacting secrets (keys, tokens, e-mail addresses...) from what shadowdiff keeps.

What is kept - stored pairs (prompt, request, every answer, triage signals), capture
lines, their ids, error texts and log lines - goes through a ``Redactor``; what is sent
upstream or to the client never does. A secret is recognised by its shape (the
``DEFAULT_PATTERNS``, or ``--redact``), or by the name it is filed under (a JSON key
such as ``api_key`` or ``password``); a secret with neither - a bare random word in a
prompt - cannot be told from text and is kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import aiohttp
from aiohttp.http import RawResponseMessage

from shadowdiff.answers.folding import fold
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.errors import ConfigError

MARK = "[REDACTED]"

# Where a key's shape starts and ends: not inside an ASCII word. (``\b`` would also
# need a boundary after CJK or accented letters, missing "密钥是sk-…" and "clé sk-…é",
# and never sees one after ``_``, missing "DB_PASSWORD=…".)
_START = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"
_TOKEN = r"[A-Za-z0-9._~+/=-]"   # a bearer token's characters (RFC 6750's b64token)
# Recognised by their shape. Each is weighed against ordinary text (tests/answers/test_redact.py):
# where a shape could be a word, the pattern asks for more than the shape.
DEFAULT_PATTERNS = (
    # Every pattern runs in time linear in the text, whatever a client sends (a 1 MB
    # prompt of one letter, of "a.a.a.", of "key_key_"...): a shape starts where its
    # characters start (the look-behinds), and each unbounded run that could be retried
    # from every position of a long run is bounded. tests/answers/test_redact.py holds the
    # hostile shapes; bench/redact_cost.py measures them.
    # e-mail addresses (a local part is at most 64 characters, a domain 253)
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}"
    r"(?![A-Za-z])",
    # Authorization credentials, any case: the token must look like one (8+ characters
    # with a digit, a base64 sign or an inner capital), so "basic understanding" is text
    rf"(?i:{_START}(?:bearer|basic)\s{{1,8}})(?={_TOKEN}{{0,512}}?(?:[0-9+/=_~]|[a-z][A-Z])){_TOKEN}{{8,}}",
    # JSON Web Tokens: base64url '{"' header and payload, a signature (empty for alg none)
    # (once "eyJ" starts a run, the run is taken whole: retried from each "eyJ-" of a
    # long run, a search for the dots would be quadratic; base64 of '{"' is no prose)
    rf"{_START}eyJ[A-Za-z0-9_-]{{4,}}+(?:\.eyJ[A-Za-z0-9_-]{{4,}}+\.[A-Za-z0-9_-]*+)?",
    # OpenAI-style keys (sk-…, sk-proj-…, sk-ant-…), any length from 8
    rf"{_START}sk-[A-Za-z0-9_-]{{8,}}",
    # Stripe keys; GitHub, GitLab, Hugging Face, npm, Slack, SendGrid and Google tokens
    rf"{_START}[spr]k_(?:live|test)_[A-Za-z0-9]{{8,}}",
    rf"{_START}(?:gh[pousr]_[A-Za-z0-9]{{20,}}|github_pat_[A-Za-z0-9_]{{20,}}|hf_[A-Za-z0-9]{{20,}})",
    rf"{_START}(?:glpat-[A-Za-z0-9_-]{{20,}}|npm_[A-Za-z0-9]{{36}}|SG\.[A-Za-z0-9_-]{{16,}}\.[A-Za-z0-9_-]{{16,}})",
    rf"{_START}xox[abprs]-[A-Za-z0-9-]{{10,}}|{_START}AIza[0-9A-Za-z_-]{{30,}}",
    # AWS access key ids
    rf"{_START}(?:AKIA|ASIA)[A-Z0-9]{{16}}{_END}",
    # key-…/api_… identifiers: a run of 16+ letters and digits with a digit (key_performance_indicators is text)
    rf"{_START}(?:api|key|token|secret)[-_](?=[A-Za-z]{{0,64}}[0-9])[A-Za-z0-9]{{16,}}{_END}",
    # a value filed under a credential's name, in text, a URL's query or a connection
    # string: api_key=…, "password": "…", ?api-key=…, AccountKey=…, AWS_SECRET_ACCESS_KEY: …
    # (only the value goes; a call such as input() is no value)
    rf"(?i:{_START}(?:api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token"
    r"|client[_-]?secret|secret[_-]?access[_-]?key|private[_-]?key|account[_-]?key|password|passwd)"
    r"[\"']?\s{0,8}[:=]\s{0,8}[\"']?)(?P<secret>[A-Za-z0-9._~+/=!@#$%^*-]{6,})",
    # ...and under a short or common name, with = only (token=…, secret=…, pwd=…): "the
    # secret: patience" is prose
    rf"(?i:{_START}(?:token|secret|pwd|pass|sig)=)(?P<secret>[A-Za-z0-9._~+/%!@#$^*-]{{6,}})",
    # the credentials of an Authorization header written out, whatever its scheme
    r"(?i:authorization[\"']?\s{0,8}[:=]\s{0,8}[\"']?)(?P<secret>[^\s\"',;]{1,64}(?:[ \t]{1,8}[^\s\"',;]{1,4096})?)",
    # credentials in a URL: scheme://user:password@host (the user may be empty: redis://:pw@)
    r"(?i:(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://)(?P<secret>[^\s/?#@:]{0,256}:[^\s/?#@]{1,256})@",
    # PEM private keys (the body is base64 and its headers: a dash run ends it)
    r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s:,.]|-(?!----))*+"
    r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY-----",
)

# What each default pattern cannot match without: one of several strings in the text
# ("@" for an e-mail address), and for a pattern that ignores case one of several
# strings in the text folded (``shadowdiff.answers.folding``), tried before the pattern.
# A text that has none of them is not searched with it: most texts hold no secret, and sixteen regular
# expression searches cost ~0.3 ms per 1,000 characters where these look-ups cost a
# few microseconds. A pattern not listed here (one of --redact's) is always searched.
_NEEDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = dict(zip(DEFAULT_PATTERNS, (
    (("@",), ()),
    ((), ("bearer", "basic")),
    (("eyJ",), ()),
    (("sk-",), ()),
    (("k_live_", "k_test_"), ()),
    (("_",), ()),
    (("glpat-", "npm_", "SG."), ()),
    (("xox", "AIza"), ()),
    (("AKIA", "ASIA"), ()),
    (("api-", "api_", "key-", "key_", "token-", "token_", "secret-", "secret_"), ()),
    ((":", "="), ("key", "token", "secret", "passw")),
    (("=",), ()),
    ((), ("authorization",)),
    (("://",), ()),
    (("-----BEGIN ",), ()),
), strict=True))
# Short texts known to match no pattern (``Redactor._clean``): a pair's JSON repeats the same
# keys and small values ("role", "content", a signal's "kind"...), some thirty of the forty
# texts a stored pair has redacted, each ~15 look-ups and searches. Only texts that neither
# a pattern matches nor hold a credential given as a literal are remembered, so that no
# secret is held longer than its pair.
CLEAN_LENGTH = 256   # characters, at most, of a text remembered as clean
CLEAN_TEXTS = 8192   # texts remembered, at most (then forgotten all at once)
MIN_LITERAL = 8   # the shortest header credential removed verbatim from what is kept
MAX_LITERALS = 128  # credentials removed verbatim, at most (each is one search of every text kept)
MIN_COOKIE = 16   # the shortest cookie value taken for a credential ("accepted", "english" are not)
MAX_COOKIES = 16  # cookie values taken for credentials, at most: the longest (a browser sends dozens)
# Request headers whose values are credentials: removed verbatim from everything kept for the request.
_SECRET_HEADER = re.compile(rb"(?i)auth|key|token|secret|passw|cookie")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

# Top-level request fields that are dropped from what is kept (store and capture):
# credentials some clients put in the body, and the end user's identity.
CREDENTIAL_FIELDS = frozenset({"api_key", "user"})
# Top-level request fields (any case, with or without - and _) whose values are
# credentials, removed verbatim from everything kept for the request (``body_secrets``).
_BODY_SECRET_FIELDS = frozenset({"apikey", "user", "key", "token", "password", "secret", "accesstoken"})
# JSON keys (any depth, any case, with or without - and _) whose string values are redacted.
_SECRET_KEYS = frozenset({
    "apikey", "xapikey", "password", "passwd", "secret", "clientsecret", "accesstoken", "authtoken", "refreshtoken",
    "sessiontoken", "idtoken", "token", "bearer", "authorization", "cookie", "setcookie", "privatekey",
    "secretaccesskey", "awssecretaccesskey", "accountkey", "credential", "credentials"})
# A URL's query: matched from the URL's start to the end of its target whether or not it
# has a query (a match that always succeeds once started is never retried from each
# later position: linear on "http://ahttp://a..." as on anything).
_URL = re.compile(r"""(?i)(?<![A-Za-z0-9+.-])([a-z][a-z0-9+.-]{0,30}://[^\s?#'"]*)(\?[^\s#'"]*)?""")


def check_patterns(patterns: Iterable[str]) -> None:
    """``ConfigError`` for the first pattern that is not a regular expression."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--redact {pattern!r} is not a valid regular expression: {exc}") from exc


def without_credentials(request: dict[str, Any]) -> dict[str, Any]:
    """A request as it may be kept: without the ``CREDENTIAL_FIELDS``."""
    return {k: v for k, v in request.items() if k not in CREDENTIAL_FIELDS}


def header_secrets(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str, ...]:
    """The credentials in a request's headers, as strings to remove verbatim (as whole
    words) from what is kept of it: the values of ``Authorization``, ``api-key`` and any
    header whose name says it holds a key, token, secret or password, and an
    Authorization's credentials without their scheme, of ``MIN_LITERAL`` characters or
    more; of a ``Cookie``, the values of ``MIN_COOKIE`` characters or more."""
    secrets: list[str] = []
    cookies: list[str] = []
    for name, raw in headers:
        if not _SECRET_HEADER.search(name):
            continue
        value = _header_value(raw)
        if name.lower() == b"cookie":
            # (not the whole header, nor a short value: a session id, not a preference)
            cookies += [v for part in value.split(";") if len(v := part.partition("=")[2].strip()) >= MIN_COOKIE]
        else:
            secrets += [value, value.partition(" ")[2].strip()]   # and without its scheme ("Bearer")
    # the credentials first, then the longest cookies: dozens of cookies never crowd an API key out
    cookies = sorted(set(cookies), key=len, reverse=True)[:MAX_COOKIES]
    return tuple(dict.fromkeys(s for s in (*secrets, *cookies) if len(s) >= MIN_LITERAL))


def _header_value(raw: bytes) -> str:
    """A header's value as an upstream that echoes it reads it: UTF-8 (ASCII included), or
    Latin-1 for bytes that are not."""
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return raw.decode("latin-1").strip()


def body_secrets(request: dict[str, Any]) -> tuple[str, ...]:
    """The credentials in a request's body, as strings to remove verbatim (as whole
    words) from what is kept of it, as ``header_secrets`` does for its headers: an
    upstream may repeat them ("Incorrect API key provided: …"). The string values of the
    top-level ``CREDENTIAL_FIELDS`` and ``_BODY_SECRET_FIELDS``, and of every key at any
    depth that ``Redactor.value`` replaces whole (``password``, ``access_token``...)."""
    secrets: list[str] = []
    stack: list[Any] = [request]   # (no recursion: a request may be 1,024 levels deep)
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for k, v in item.items():
                named = isinstance(k, str) and (_normal(k) in _SECRET_KEYS
                                                or (item is request and _normal(k) in _BODY_SECRET_FIELDS))
                if isinstance(v, str):
                    if named:
                        secrets.append(v.strip())
                else:
                    stack.append(v)
    return tuple(s for s in secrets if len(s) >= MIN_LITERAL)


def public_url(url: str) -> str:
    """A server's URL as it is shown, stored or exported: without ``user:password@``."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", r"\1", url, flags=re.I)


def without_queries(text: str) -> str:
    """``text`` with every URL's query string replaced by the mark (an error text from
    an HTTP library names the URL it called, query and all: ``?api-key=…``)."""
    return _URL.sub(lambda m: m[1] if m[2] is None else f"{m[1]}?{MARK}", text)


def failure_text(exc: BaseException) -> str:
    """An upstream call's exception on one line, for a log line or a stored error: what
    went wrong, never what was sent. aiohttp's messages carry the request's URL, query
    string included (cut here), and the repr of a ClientResponseError (an invalid status
    line is one) its headers, the client's Authorization among them."""
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        where = "within the answer's head" if isinstance(exc.message, RawResponseMessage) else "before any answer"
        text = f"the upstream closed the connection {where}"
    elif isinstance(exc, aiohttp.ClientResponseError):
        text = f"HTTP {exc.status}, {exc.message}"
    elif isinstance(exc, aiohttp.ClientConnectorCertificateError):
        # (its os_error is not the cause: the certificate's own error says why)
        text = f"cannot connect to {exc.host}:{exc.port}: TLS: {exc.certificate_error}"
    elif isinstance(exc, aiohttp.ClientConnectorError):
        error = exc.os_error   # asyncio's strerror is "Connect call failed ('host', port)"
        if error.errno and not isinstance(error, socket.gaierror):
            reason = os.strerror(error.errno)
        else:   # a resolver's errno is getaddrinfo's, not errno's: its own text says it
            reason = error.strerror or str(error)
        text = f"cannot connect to {exc.host}:{exc.port}: {reason}"
    elif isinstance(exc, TimeoutError):
        text = str(exc) or "timed out"
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror     # without "[Errno None]"
    else:
        text = str(exc) or "no detail"
    return without_queries(f"{type(exc).__name__}: " + " ".join(text.split()))[:300]


class Redactor:
    """Replaces every match of the patterns with ``MARK``: in strings, in every string
    and key of a JSON value, in answers and pairs. A pattern with a group named
    ``secret`` has only that group replaced; ``with_literals`` adds exact strings."""

    def __init__(self, patterns: Iterable[str]) -> None:
        # (each pattern with what a text must hold for it to match: ``_NEEDS``)
        self._patterns = [(re.compile(p), *_NEEDS.get(p, ((), ()))) for p in patterns]
        self._literals: tuple[str, ...] = ()
        self._active = bool(self._patterns)
        self._clean: set[str] = set()   # short texts none of the patterns matches (``CLEAN_LENGTH``)

    def failure(self, exc: BaseException, headers: Iterable[tuple[bytes, bytes]]) -> str:
        """``failure_text`` of an exception met on a request with these headers, for a log
        line: redacted, the credentials the headers carried included, should the upstream
        have repeated one (a status line or error text echoing an opaque key)."""
        return self.with_literals(header_secrets(headers)).text(failure_text(exc))

    def with_literals(self, literals: Iterable[str]) -> Redactor:
        """This redactor that also replaces these exact strings: the credentials a
        request's headers carried, which no pattern may recognise (an opaque key) and an
        upstream may repeat ("Incorrect API key provided: …"). Strings shorter than
        ``MIN_LITERAL`` are left out: they would cut ordinary words."""
        # (at most MAX_LITERALS: these first, in the order given, the most telling first, then
        # those this redactor had - a request's body credentials before its headers', a
        # header credential before a cookie; each is one search of every text kept)
        given = [s for s in literals if len(s) >= MIN_LITERAL]
        if set(given) <= set(self._literals):
            return self
        kept = tuple(dict.fromkeys([*given, *self._literals]))[:MAX_LITERALS]
        if not kept:
            return self
        copy = Redactor(())
        copy._patterns, copy._literals, copy._active = self._patterns, kept, True
        copy._clean = self._clean    # (the same patterns: what they do not match, they do not)
        return copy

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """What to replace in ``text``: the matches of all patterns, merged where they overlap."""
        known_clean = text in self._clean
        spans = [] if known_clean else self._pattern_spans(text)
        holds_literal = False
        for literal in self._literals:
            at = text.find(literal)
            holds_literal = holds_literal or at >= 0
            while at >= 0:
                end = at + len(literal)
                # a whole word only: "python" in a header must not cut "pythonic" in an answer
                if (at == 0 or text[at - 1] not in _ALNUM) and (end == len(text) or text[end] not in _ALNUM):
                    spans.append((at, end))
                at = text.find(literal, at + 1)
        if not (spans or known_clean or holds_literal) and len(text) <= CLEAN_LENGTH:
            # (a text holding a request's credential, even inside a word, is never kept)
            if len(self._clean) >= CLEAN_TEXTS:
                self._clean.clear()
            self._clean.add(text)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def _pattern_spans(self, text: str) -> list[tuple[int, int]]:
        """The matches of the patterns in ``text``, each searched only where it can match (``_NEEDS``)."""
        spans = []
        folded: str | None = None
        for pattern, needs, folded_needs in self._patterns:
            # (``map`` over ``__contains__``: a generator's frame per pattern and text cost as much as the look-ups)
            if needs and not any(map(text.__contains__, needs)):
                continue
            if folded_needs:
                folded = fold(text) if folded is None else folded
                if not any(map(folded.__contains__, folded_needs)):
                    continue
            group = "secret" if "secret" in pattern.groupindex else 0
            spans += [m.span(group) for m in pattern.finditer(text) if m.end(group) > m.start(group)]
        return spans

    def text(self, value: str) -> str:
        if not self._active:
            return value
        out, at = [], 0
        for start, end in self._spans(value):
            out += [value[at:start], MARK]
            at = end
        return "".join(out) + value[at:] if out else value

    def value(self, value: Any) -> Any:
        """A copy of ``value`` with every string in it redacted, keys too; a string filed
        under a credential's name (``password``, ``api_key``...) is replaced whole. Without
        recursion: a request is read up to 1,024 levels deep (orjson), deeper than Python
        recurses."""
        if not self._active:
            return value
        top: list[Any] = [None]
        clashes: dict[tuple[int, Any], int] = {}      # per dict and redacted key, how many took its name
        stack: list[tuple[Any, Any, Any]] = [(value, top, 0)]   # (a value, its copy's container, place)
        while stack:
            item, into, place = stack.pop()
            if isinstance(item, str):
                into[place] = self.text(item)
            elif isinstance(item, list):
                into[place] = copied = [None] * len(item)
                stack.extend((v, copied, i) for i, v in enumerate(item))
            elif isinstance(item, dict):
                into[place] = mapping = dict[Any, Any]()
                for k, v in item.items():
                    key = self.text(k) if isinstance(k, str) else k
                    if key in mapping:   # keys redacted alike are all kept, numbered
                        key = _free_key(mapping, key, clashes)
                    mapping[key] = None   # the keys in their order; the values come after
                    if isinstance(v, str) and isinstance(k, str) and _normal(k) in _SECRET_KEYS:
                        mapping[key] = MARK
                    else:
                        stack.append((v, mapping, key))
            else:
                into[place] = item
        return top[0]

    def tokens(self, tokens: Sequence[str] | None) -> list[str] | None:
        """Output tokens, redacted where their concatenation is: a key spelt over several
        tokens is cut from each of them (the token count, and so the margins, stay)."""
        if not tokens or not self._active:
            return list(tokens) if tokens is not None else None
        joined = "".join(tokens)
        spans = self._spans(joined)
        if not spans:
            return list(tokens)
        out, start, first = [], 0, 0
        for token in tokens:
            end = start + len(token)
            # spans are sorted and disjoint: those ending before this token are done with
            # (a walk over both lists, not every token against every span)
            while first < len(spans) and spans[first][1] <= start:
                first += 1
            piece, at, i = [], start, first
            while i < len(spans) and spans[i][0] < end:
                s, e = spans[i]
                piece.append(joined[at:max(s, start)])
                if s >= start:
                    piece.append(MARK)
                at = min(e, end)
                i += 1
            out.append("".join(piece) + joined[at:end])
            start = end
        return out

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """A request as it is kept (stored or captured): without the ``CREDENTIAL_FIELDS``,
        redacted, its body's credentials (``body_secrets``) removed wherever they recur."""
        kept: dict[str, Any] = self.with_literals(body_secrets(request)).value(without_credentials(request))
        return kept

    def _choice_parts(self, text: str, reasoning: str | None, refusal: str | None,
                      tool_calls: list[dict[str, Any]] | None) -> dict[str, Any]:
        return {"text": self.text(text), "reasoning": None if reasoning is None else self.text(reasoning),
                "refusal": None if refusal is None else self.text(refusal), "tool_calls": self.value(tool_calls)}

    def answer(self, answer: Answer) -> Answer:
        """An answer as it is stored: every choice's text, reasoning, refusal and tool
        calls, the tokens, the error and the model name redacted."""
        if not self._active:
            return answer
        others = tuple(replace(c, **self._choice_parts(c.text, c.reasoning, c.refusal, c.tool_calls))
                       for c in answer.others)
        return replace(answer, **self._choice_parts(answer.text, answer.reasoning, answer.refusal, answer.tool_calls),
                       model=None if answer.model is None else self.text(answer.model),
                       error=None if answer.error is None else self.text(answer.error),
                       tokens=self.tokens(answer.tokens), others=others)

    def pair(self, pair: Pair) -> Pair:
        """A pair as it is stored, once it has been compared (on the true answers): its
        prompt, request (without the ``CREDENTIAL_FIELDS``), answers, signals, grade (its
        reference and what it read in the answers) and scores redacted (a score that could
        not be had says why, in a server's words, which may repeat a key). The request's
        body credentials (``body_secrets``) are removed from all of it verbatim: an
        upstream may echo an opaque key or the ``user`` in an error or an answer."""
        r = self.with_literals(body_secrets(pair.request))
        if not r._active:
            return replace(pair, request=without_credentials(pair.request))
        return replace(pair, prompt=r.text(pair.prompt), request=r.request(pair.request),
                       answers={side: r.answer(a) for side, a in pair.answers.items()},
                       category=None if pair.category is None else r.text(pair.category),
                       signals=r.value(pair.signals), grade=r.value(pair.grade),
                       score=r.value(pair.score), noise_score=r.value(pair.noise_score))

    async def pair_off_loop(self, pair: Pair) -> Pair:
        """``pair`` for callers on an event loop, always in a thread: its cost grows with
        the request as well as the answers (a client's request of 8,000 keys took 43 s
        on the loop), and only stored pairs - the few that changed - are redacted."""
        if not self._active and not set(pair.request) & CREDENTIAL_FIELDS and not body_secrets(pair.request):
            return pair
        return await asyncio.to_thread(self.pair, pair)


def _free_key(mapping: dict[Any, Any], key: Any, clashes: dict[tuple[int, Any], int]) -> str:
    """A name for a key that redacted to one already in ``mapping``: ``[REDACTED]'2``,
    ``[REDACTED]'3``... (counted, so that thousands of such keys cost no more than
    thousands of others: appending a quote per earlier clash was cubic)."""
    n = clashes.get((id(mapping), key), 1)
    while (name := f"{key}'{n + 1}") in mapping:
        n += 1
    clashes[id(mapping), key] = n + 1
    return name


def _normal(key: str) -> str:
    return key.lower().replace("-", "").replace("_", "")


class LogRedaction(logging.Filter):
    """A log handler's filter that redacts each record - its message, arguments and
    traceback - before it is formatted; installed on every handler ``serve`` logs through."""

    def __init__(self, patterns: Sequence[str] = DEFAULT_PATTERNS) -> None:
        super().__init__()
        self.redactor = Redactor(patterns)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.name == "uvicorn.access":
            # (its formatter unpacks the arguments: method, path with its query...)
            record.args = tuple(self._clean(a) if isinstance(a, str) else a for a in record.args)
        else:
            record.msg, record.args = self._clean(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True

    def _clean(self, text: str) -> str:
        return self.redactor.text(without_queries(text))

