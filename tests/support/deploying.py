"""What the deployment tests share: the environment variables ``shadowdiff serve`` reads."""

from __future__ import annotations

from shadowdiff.proxy.cli import serve

SERVE_VARIABLES = {p.envvar for p in serve.params if isinstance(getattr(p, "envvar", None), str)}
