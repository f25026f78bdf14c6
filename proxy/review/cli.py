"""``shadowdiff review STORE``: the review UI on its own, for a replay's store."""

from __future__ import annotations

import secrets
import sys

import click

from proxy.store import Store
from shadowdiff.errors import ShadowdiffError


@click.command("review")
@click.argument("store")
@click.option("--token", envvar="SHADOWDIFF_REVIEW_TOKEN", show_envvar=True, default=None,
              help="The token reviewers sign in with (default: a random one, printed).")
@click.option("--claim-ttl", default=600.0, show_default=True,
              help="Seconds a pair taken with 'next' stays reserved for its reviewer.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8090, show_default=True)
def review(store: str, token: str | None, claim_ttl: float, host: str, port: int) -> None:
    """Serve the blind side-by-side review UI for the pairs in STORE."""
    import uvicorn

    from proxy.review.app import build_review_app

    if token is not None and len(token) < 8:
        raise click.UsageError("--token must be at least 8 characters")
    generated = token is None
    token = token or secrets.token_urlsafe(18)
    try:
        opened = Store.open_existing(store)
    except ShadowdiffError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        app = build_review_app(opened, token, claim_ttl=claim_ttl)
        print(f"shadowdiff review: http://{host}:{port}/review/", file=sys.stderr, flush=True)
        if generated:
            print(f"sign in with the token {token}", file=sys.stderr, flush=True)
        uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
    finally:
        opened.close()
