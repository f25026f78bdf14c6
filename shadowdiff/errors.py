"""The one error hierarchy of shadowdiff.

    ShadowdiffError                 anything shadowdiff raises on purpose
    ├── ConfigError                 a setting, flag or configuration file is wrong
    │   └── ProfileError            a simulator profile or fault specification is wrong
    └── InputError                  data handed to shadowdiff cannot be used
        └── RequestError            an HTTP request body is invalid (carries a status)

Messages say what was wrong and what to do about it: they are shown to users as-is,
on one line (``Error: <message>``). ``shadowdiff.options.click_error`` exits 3 for a
ConfigError and 1 for the others (report, judge, review, and a port that cannot be
taken); replay exits 1 (3 with --gate), and a bad flag of serve or simulate is click's
usage error, 2.
"""

from __future__ import annotations


class ShadowdiffError(Exception):
    """Base class of every error shadowdiff raises on purpose."""


class ConfigError(ShadowdiffError):
    """A setting, command-line flag or configuration file is wrong."""


class ProfileError(ConfigError):
    """A simulator profile, drift rate or fault specification is wrong."""


class InputError(ShadowdiffError):
    """Input data (a log, a file, a request) cannot be used."""


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
