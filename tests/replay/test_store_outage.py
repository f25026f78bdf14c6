"""A replay whose store fails for longer than it waits stops, to be resumed, rather than
hang: it waits for room (it has no client to protect) up to a limit."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import runner
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.runner import ReplaySettings
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import Store
from shadowdiff.store import writer as writer_module
from shadowdiff.vocabulary import Side
from tests.support.servers import serve_app


def test_a_store_down_too_long_stops_the_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(writer_module, "RETRY_MAX", 0.1)
    monkeypatch.setattr(runner, "GIVE_UP_AFTER", 1.0)

    def down(*_args: object) -> None:
        raise OperationalError("INSERT INTO pairs", {}, Exception("could not connect to server"))

    monkeypatch.setattr(Store, "add_pairs", down)
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"Prompt {i} about rivers." for i in range(200)) + "\n")   # far more than the queue
    outcome: dict[str, BaseException] = {}
    with serve_app(build_app(SimulatorSettings(served_model_names=("b",)))) as base, \
            serve_app(build_app(SimulatorSettings(served_model_names=("c",)))) as cand:
        settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, base),
                                  candidate=Upstream(Side.CANDIDATE, cand), concurrency=4)

        def replay() -> None:
            try:
                run_replay(settings, tmp_path / "out", None, resume=False)
            except BaseException as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=replay, daemon=True)
        thread.start()
        thread.join(60)
    assert not thread.is_alive(), "the replay hangs on a store that is down"
    assert "could not connect to server" in str(outcome.get("error"))


def test_replay_gate_reads_a_store_outage_as_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run a store outage stopped is unfinished: ``replay --gate`` exits 2 (INCOMPLETE), as
    ``report`` says of it afterwards, never 1 (which a CI reads as FAIL); without --gate, 1."""
    from click.testing import CliRunner

    from shadowdiff.replay import cli as replay_cli

    def outage(*_args: object, **_kwargs: object) -> None:
        raise OperationalError("INSERT INTO pairs", {}, Exception("could not connect to server"))

    monkeypatch.setattr(replay_cli, "run_replay", outage)
    log = tmp_path / "log.txt"
    log.write_text("A prompt.\n")
    command = [str(log), "--baseline", "http://127.0.0.1:9", "--candidate", "http://127.0.0.1:10",
               "--out", str(tmp_path / "out")]
    gated = CliRunner().invoke(replay_cli.replay, [*command, "--gate"])
    assert gated.exit_code == 2 and "the store failed" in gated.output, gated.output
    assert CliRunner().invoke(replay_cli.replay, command).exit_code == 1
