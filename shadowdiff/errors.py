"""The one error hierarchy of shadowdiff.

    ShadowdiffError                 anything shadowdiff raises on purpose
    ├── ConfigError                 a setting, flag or configuration file is wrong
    │   └── ProfileError            a simulator profile or fault specification is wrong
    ├── InputError                  data handed to shadowdiff cannot be used
    │   └── RequestError            an HTTP request body is invalid (carries a status)
    └── RunFinished                 pairs or counts written to a run already finished

Messages say what was wrong and what to do about it: they are shown to users as-is,
on one line (``Error: <message>``). ``shadowdiff.commands.options.click_error`` exits 3 for a
ConfigError and 1 for the others (report, judge, review, and a port that cannot be
taken); replay exits 1 (3 with --gate), and a bad flag of serve or simulate is click's
usage error, 2.
"""

from __future__ import annotations

INTERRUPTED = 130   # the exit status of a command Ctrl+C stopped: 128 + SIGINT, as a shell reports it


class ShadowdiffError(Exception):
    """Base class of every error shadowdiff raises on purpose."""


class ConfigError(ShadowdiffError):
    """A setting, command-line flag or configuration file is wrong."""


class ProfileError(ConfigError):
    """A simulator profile, drift rate or fault specification is wrong."""


class InputError(ShadowdiffError):
    """Input data (a log, a file, a request) cannot be used."""


class RunFinished(ShadowdiffError):
    """Pairs or counts were written to a run that is finished (``shadowdiff close``
    closed it, or it ended): a finished run's verdict never changes afterwards, so
    nothing is added to it. A proxy moves to a new run when it gets this."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} is finished (closed): nothing more is added to it")
        self.run_id = run_id


class RequestError(InputError):
    """An HTTP request is invalid; rendered as an OpenAI-style error body.

    ``kind`` is the OpenAI error ``type`` (``BadRequestError``, ``NotFoundError``...)
    and ``param`` names the offending field when one is known.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        kind: str = "BadRequestError",
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.param = param
