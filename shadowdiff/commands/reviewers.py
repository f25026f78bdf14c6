"""``shadowdiff reviewers``: issue, list, reissue and revoke reviewers' own tokens.

A token is printed once, when it is made; the store keeps only its digest. Give each
person their own, so that their verdicts carry a name the server vouches for and
their reveal is theirs alone; ``--admin`` makes one who may also export and read
everyone's verdicts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from shadowdiff.commands.options import click_error
from shadowdiff.errors import ShadowdiffError

if TYPE_CHECKING:   # (imported where the commands run: ``--help`` loads no store)
    from shadowdiff.store.reviewers import Reviewer, Reviewers


@contextlib.contextmanager
def _reviewers(store: str) -> Iterator[Reviewers]:
    from shadowdiff.store import Store
    from shadowdiff.store.reviewers import Reviewers

    try:
        opened = Store.open_existing(store)
        try:
            yield Reviewers(opened)
        finally:
            opened.close()
    except ShadowdiffError as exc:
        raise click_error(exc) from exc


def _issued(reviewer: Reviewer, token: str, what: str) -> None:
    click.echo(f"{what} {reviewer.name}{' (admin)' if reviewer.admin else ''}; their token (shown once, "
               "keep it secret; they sign in with it at /review/login):", err=True)
    click.echo(token)


@click.group("reviewers")
def reviewers() -> None:
    """Reviewers' own sign-in tokens for the review UI (STORE: the store's path or URL)."""


@reviewers.command("add")
@click.argument("store")
@click.argument("name")
@click.option("--admin", is_flag=True, help="May also export and read every reviewer's verdicts.")
def add(store: str, name: str, admin: bool) -> None:
    """Make a reviewer NAME and print their token."""
    with _reviewers(store) as r:
        _issued(*r.add(name, admin=admin), "added")


@reviewers.command("token")
@click.argument("store")
@click.argument("name")
def token(store: str, name: str) -> None:
    """Give NAME a new token (the old one, and its sessions, stop working; a revoked reviewer is restored)."""
    with _reviewers(store) as r:
        _issued(*r.reissue(name), "new token for")


@reviewers.command("revoke")
@click.argument("store")
@click.argument("name")
def revoke(store: str, name: str) -> None:
    """Revoke NAME: their token and sessions stop working; their verdicts stay."""
    with _reviewers(store) as r:
        r.revoke(name)
    click.echo(f"revoked {name}: their token and sessions no longer open the review UI; their verdicts stay")


@reviewers.command("list")
@click.argument("store")
def list_reviewers(store: str) -> None:
    """The reviewers, with their role and state (never their tokens)."""
    with _reviewers(store) as r:
        found = r.all()
    if not found:
        click.echo("no reviewers yet: `shadowdiff reviewers add STORE NAME` makes one")
    for x in found:
        state = f"revoked {x.revoked_at.isoformat()}" if x.revoked_at else "active"
        click.echo(f"{x.name}\t{'admin' if x.admin else 'reviewer'}\t{state}\tsince {x.created_at.isoformat()}")
