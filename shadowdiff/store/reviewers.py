"""Reviewer identities: a sign-in token per reviewer, issued by ``shadowdiff reviewers``.

A token is shown once, when it is made; the store keeps only its SHA-256 digest (a
token is 32 random bytes, so a plain digest is as good as a slow hash here and lets a
sign-in find its reviewer with one indexed lookup). Reissuing a reviewer's token or
revoking the reviewer ends the sessions the old token opened (sessions are signed
over the digest: ``shadowdiff.review.auth``).
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from shadowdiff.errors import InputError
from shadowdiff.store import schema
from shadowdiff.store.store import Store

TOKEN_PREFIX = "sdr_"     # recognisable in a leaked paste, as GitHub's ghp_ is
MAX_NAME = 255


@dataclass(frozen=True)
class Reviewer:
    id: int
    name: str
    admin: bool
    token_digest: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    """A reviewer's name as stored, or ``InputError`` saying what is wrong with it.

    In one spelling: NFKC (a full-width "Ａna" is "Ana") with runs of spaces as one, as
    HTML shows them. (Letters of other scripts that look alike, a Cyrillic "А", stay
    apart: telling those from a real name is beyond a normal form.)"""
    name = " ".join(unicodedata.normalize("NFKC", name).split())
    if not name:
        raise InputError("a reviewer needs a name")
    if len(name) > MAX_NAME:
        raise InputError(f"a reviewer's name is at most {MAX_NAME} characters ({len(name)} given)")
    # control characters (NUL, line breaks, DEL) and invisible format characters (bidi
    # overrides, zero-width joiners), with which one name could pass for another
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in name):
        raise InputError("a reviewer's name cannot hold control or invisible characters (NUL, line breaks, "
                         "bidi overrides, zero-width spaces)")
    return name


def _reviewer(row: sa.Row[tuple[object, ...]]) -> Reviewer:
    m = row._mapping
    return Reviewer(int(m["id"]), str(m["name"]), bool(m["admin"]), str(m["token_digest"]),
                    m["created_at"], m["revoked_at"])


class Reviewers:
    def __init__(self, store: Store) -> None:
        self.engine = store.engine

    def add(self, name: str, admin: bool = False) -> tuple[Reviewer, str]:
        """A new reviewer and their token (shown once: only its digest is kept)."""
        name = check_name(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        t = schema.reviewers
        with self.engine.begin() as c:
            if c.execute(sa.select(t.c.id).where(t.c.name == name)).first() is not None:
                raise InputError(f"there is already a reviewer named {name!r} "
                                 "(`shadowdiff reviewers token` gives them a new token)")
            c.execute(t.insert().values(name=name, token_digest=digest(token), admin=admin,
                                        created_at=datetime.now(UTC)))
        found = self.by_name(name)
        assert found is not None
        return found, token

    def reissue(self, name: str) -> tuple[Reviewer, str]:
        """A new token for ``name`` (active again if revoked); the old one stops working."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        t = schema.reviewers
        with self.engine.begin() as c:
            done = c.execute(t.update().where(t.c.name == name).values(token_digest=digest(token), revoked_at=None))
            if done.rowcount != 1:
                raise InputError(f"no reviewer named {name!r}")
        found = self.by_name(name)
        assert found is not None
        return found, token

    def revoke(self, name: str) -> Reviewer:
        t = schema.reviewers
        with self.engine.begin() as c:
            done = c.execute(t.update().where(t.c.name == name, t.c.revoked_at.is_(None))
                             .values(revoked_at=datetime.now(UTC)))
        found = self.by_name(name)
        if found is None:
            raise InputError(f"no reviewer named {name!r}")
        if done.rowcount != 1:
            raise InputError(f"{name!r} is already revoked")
        return found

    def all(self) -> list[Reviewer]:
        with self.engine.connect() as c:
            return [_reviewer(r) for r in c.execute(schema.reviewers.select().order_by(schema.reviewers.c.name))]

    def by_name(self, name: str) -> Reviewer | None:
        with self.engine.connect() as c:
            row = c.execute(schema.reviewers.select().where(schema.reviewers.c.name == name)).first()
        return _reviewer(row) if row is not None else None

    def by_id(self, reviewer_id: int) -> Reviewer | None:
        with self.engine.connect() as c:
            row = c.execute(schema.reviewers.select().where(schema.reviewers.c.id == reviewer_id)).first()
        return _reviewer(row) if row is not None else None

    def by_token(self, token: str) -> Reviewer | None:
        """The active reviewer whose token this is, or None."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        with self.engine.connect() as c:
            row = c.execute(schema.reviewers.select().where(schema.reviewers.c.token_digest == digest(token),
                                                            schema.reviewers.c.revoked_at.is_(None))).first()
        return _reviewer(row) if row is not None else None
