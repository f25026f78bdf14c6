"""Fixtures for the store's tests: SQLite always, PostgreSQL when a URL is given."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from proxy.store import Store, database_url

POSTGRES = os.environ.get("SHADOWDIFF_TEST_POSTGRES")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened = Store.open(tmp_path)
        yield opened
        opened.close()
        return
    if not POSTGRES:
        pytest.skip("set SHADOWDIFF_TEST_POSTGRES=postgresql://… to test PostgreSQL")
    name = f"shadowdiff_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(database_url(POSTGRES), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    opened = Store.open(POSTGRES.rsplit("/", 1)[0] + "/" + name)
    yield opened
    opened.close()
    with admin.connect() as c:
        c.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


