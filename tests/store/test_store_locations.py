"""Where a store is: a directory (its shadowdiff.sqlite), a file, or a URL; and what the
commands that only read a store say when there is none there."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from shadowdiff.errors import ConfigError
from shadowdiff.store import STORE_FILE, Store
from tests.support import cli


def test_a_directory_name_with_a_dot_is_a_directory(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "results.v2")
    store.close()
    assert (tmp_path / "results.v2" / STORE_FILE).is_file()
    for name in ("x.sqlite", "x.sqlite3", "x.db"):    # a database file's own suffixes still name a file
        Store.open(tmp_path / name).close()
        assert (tmp_path / name).is_file()


def test_reading_never_creates_a_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=f"no shadowdiff store in {empty} "):
        Store.open_existing(empty)
    assert list(empty.iterdir()) == []
    with pytest.raises(ConfigError, match="no store at"):
        Store.open_existing(tmp_path / "missing.v2")
    assert not (tmp_path / "missing.v2").exists()


@pytest.mark.parametrize("content", [b"", b"not a database\n" * 100, b"SQLite format 3\x00" + b"\x07" * 200])
def test_a_file_that_is_no_store_is_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=r"notes\.sqlite is not a shadowdiff store"):
        Store.open_existing(path)
    assert path.read_bytes() == content


def test_another_programs_database_is_no_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE t (x INTEGER)"))
    engine.dispose()
    with pytest.raises(ConfigError, match=r"other\.db is not a shadowdiff store"):
        Store.open_existing(path)
    with pytest.raises(ConfigError, match=r"other\.db is not a shadowdiff store"):
        Store.open(path)     # nor is it made one by a command that writes


def shadowdiff(*args: str) -> cli.Ran:
    return cli.shadowdiff(*args)


def test_commands_that_read_a_store_say_there_is_none(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk.sqlite"
    junk.write_text("hello\n" * 50)
    newer = tmp_path / "newer"
    store = Store.open(newer)
    with store.engine.begin() as c:
        c.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    store.close()
    commands = [("report",), ("review", "--port", "1"),
                ("judge", "--judge", "http://127.0.0.1:1", "--judge-model", "m")]
    for command, *options in commands:
        for where, message in ((empty, f"no shadowdiff store in {empty} (run replay, serve or compare first)"),
                               (junk, f"{junk} is not a shadowdiff store"),
                               (newer, "written by a newer version")):
            result = shadowdiff(command, str(where), *options)
            assert result.returncode == 3, (command, where, result.stderr)
            assert message in result.stderr, (command, result.stderr)
            assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert list(empty.iterdir()) == []


def test_an_empty_postgresql_database_is_no_store() -> None:
    from tests.support.fixtures import postgres_database

    with postgres_database() as url:
        with pytest.raises(ConfigError, match="no shadowdiff store in postgresql://"):
            Store.open_existing(url)
        Store.open(url).close()          # a command that writes makes it one
        Store.open_existing(url).close()
