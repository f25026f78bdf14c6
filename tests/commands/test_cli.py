"""The ``shadowdiff`` command line: options and messages through click's runner, signals on a real process."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

from shadowdiff.store import Store
from tests.support import cli
from tests.support.servers import HTTP, shadowdiff_process


def run(*args: str) -> cli.Ran:
    return cli.shadowdiff(*args)


def test_version_and_help() -> None:
    assert run("--version").stdout.strip() == "shadowdiff, version 0.1.0"
    shown = run("simulate", "--help")
    assert shown.returncode == 0 and not shown.stderr, shown.stderr
    for flag in ("--served-model-name", "--profile", "--seed", "--max-num-seqs", "--fault", "--speed"):
        assert flag in shown.stdout
    for command in ("replay", "report", "compare", "serve", "plan"):
        shown = run(command, "--help")
        assert shown.returncode == 0 and "Usage:" in shown.stdout and not shown.stderr, (command, shown.stderr)


def test_the_command_list_is_in_the_order_of_the_work_with_whole_sentences() -> None:
    from shadowdiff.cli import COMMANDS, SUMMARIES

    shown = run("--help").stdout
    listed = [line.split()[0] for line in shown.split("Commands:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("    ")]
    assert listed == list(COMMANDS) and listed[:4] == ["demo", "replay", "compare", "bench"], listed
    assert "..." not in shown.split("Commands:")[1] and set(SUMMARIES) == set(COMMANDS)
    assert all(text.endswith(".") and text[0].isupper() for text in SUMMARIES.values())


def test_every_option_of_every_command_says_what_it_does() -> None:
    import click

    from shadowdiff.cli import COMMANDS, main

    ctx = click.Context(main)
    silent = [(name, p.opts[0]) for name in COMMANDS for p in main.get_command(ctx, name).params  # type: ignore[union-attr]
              if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert silent == []


def test_simulate_serves_until_sigterm_and_finishes_streams_first() -> None:
    with shadowdiff_process("simulate", "--served-model-name", "Qwen/Qwen3-8B-FP8", "--profile", "fp8",
                            "--seed", "3", "--tpot", "0.03") as (process, url):
        assert HTTP.get(url + "/v1/models").json()["data"][0]["id"] == "Qwen/Qwen3-8B-FP8"
        body = {"model": "Qwen/Qwen3-8B-FP8", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 30, "stream": True}
        with HTTP.stream("POST", url + "/v1/chat/completions", json=body) as r:
            stream = r.iter_raw()
            received = next(stream)
            process.send_signal(signal.SIGTERM)
            received += b"".join(stream)
        assert received.endswith(b"data: [DONE]\n\n")
        # uvicorn re-raises SIGTERM once it has shut down, as a signalled process should.
        assert process.wait(15) in (0, -signal.SIGTERM)
        assert process.stderr is not None
        banner = process.stderr.read().decode()
        assert "a test double of vLLM 0.34.0, not a model" in banner
        assert "profile fp8, seed 3, speed 1.5x" in banner
        assert "Traceback" not in banner


def test_profile_file_and_overrides(tmp_path: Path) -> None:
    profile = tmp_path / "int4.toml"
    profile.write_text('name = "int4"\nbase = "fp8"\nspeed = 2.0\n[rates]\nnumber = 0.2\n')
    with shadowdiff_process("simulate", "--profile-file", str(profile), "--drift", "wording=0.1") as (process, _):
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) in (0, -signal.SIGTERM)
        assert process.stderr is not None
        assert "profile int4" in process.stderr.read().decode()


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    for args, message in [
        (("--drift", "nonsense=0.1"), "--drift 'nonsense=0.1': kind must be one of"),
        (("--profile", "fp8", "--drift", "wording=0.99"), "must add up to at most 1"),
        (("--fault", "explode=1"), "--fault 'explode=1': kind must be one of"),
        (("--max-num-seqs", "0"), "--max-num-seqs must be at least 1"),
        (("--speed", "-1"), "--speed must be positive"),
        (("--profile", "fp4"), "'fp4' is not one of"),
    ]:
        result = run("simulate", "--port", "1", *args)
        assert result.returncode == 2, args
        assert message in result.stderr, (args, result.stderr)
    bad = tmp_path / "bad.toml"
    bad.write_text("rates = 3")
    result = run("simulate", "--profile-file", str(bad))
    assert result.returncode == 2
    assert "bad.toml" in result.stderr


def test_a_busy_port_is_one_line_and_no_banner(tmp_path: Path) -> None:
    """Each command that serves takes its port before it says where it serves (and, for
    review, before it prints a sign-in token): a busy port is one error line, exit 3."""
    Store.open(tmp_path).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for command in (["simulate"], ["serve", "--primary", "http://127.0.0.1:9", "--store", str(tmp_path)],
                        ["serve", "--primary", "http://127.0.0.1:9", "--store", str(tmp_path), "--workers", "2"],
                        ["review", str(tmp_path)]):
            result = run(*command, "--port", port)
            assert result.returncode == 3, (command, result.stderr)
            assert result.stderr.strip() == f"Error: port {port} is in use (on 127.0.0.1): stop what listens " \
                                            "there, or give another --port", (command, result.stderr)
            assert result.stdout == ""


def test_a_commands_log_lines_and_a_crash_reach_the_terminal_escaped(tmp_path: Path) -> None:
    """What a command logs (the scoring's and the runner's warnings quote servers) and the
    traceback of a crash go to stderr with their control and bidi characters as escapes, as
    the commands' own lines do; a crash still exits 1."""
    import subprocess
    import sys

    script = tmp_path / "hostile.py"
    script.write_text(
        "import logging, click\n"
        "from shadowdiff import cli\n"
        "@click.command()\n"
        "def hostile():\n"
        "    logging.getLogger('shadowdiff.replay.runner')"
        ".warning('server said \\x1b[2K\\rverdict: PASS \\u202e24\\u202c')\n"
        "    raise RuntimeError('boom \\x1b[31m\\rverdict: PASS')\n"
        "cli.main.add_command(hostile)\n"
        "cli.main(['hostile'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    for raw in ("\x1b", "\r", "\u202e"):
        assert raw not in done.stderr, done.stderr
    assert "server said \\x1b[2K\\rverdict: PASS \\u202e24\\u202c" in done.stderr
    assert "RuntimeError: boom \\x1b[31m\\rverdict: PASS" in done.stderr
