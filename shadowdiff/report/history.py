"""Run over run: the other runs in the store of the same prompts, each one's headline
figures beside this run's, so that a report answers "is this candidate better or worse
than the last one, or than last week's?" without a second report open.

The same prompts: a replay of a log with the same bytes (its sha256 as the run recorded it,
wherever the file was: a CI checkout moves it), read the same way (format and turn); or a
serve run of the same deployment (``serve --deployment``). The figures are each run's own
summary, read from the store as its report would read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowdiff.report.headline import side_rows
from shadowdiff.report.summary import Summary, summarize
from shadowdiff.store import Store
from shadowdiff.store.rows import Run
from shadowdiff.vocabulary import Side

# The runs shown: the newest of the same prompts (each costs one summary's reads of the store).
HISTORY_RUNS = 10
_READ_ALIKE = ("format", "turn")


@dataclass(frozen=True)
class HistoryRow:
    """One run of the same prompts: when, against what, and how much its answers changed."""

    run_id: str
    started: str
    this: bool                       # the run this report is of
    candidate: str                   # the candidate's model, else its address
    candidate_url: str
    version: str                     # the candidate's engine version as the run recorded it
    labels: str                      # the run's --label KEY=VALUE, "k=v, k=v"
    compared: int
    changed_rate: float | None
    substantive_rate: float | None
    noise_rate: float | None
    token_agreement: float | None    # pooled, teacher-forced
    kl_per_token: float | None
    errors: int

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def same_prompts(a: Run, b: Run) -> bool:
    """Whether two runs asked the same prompts: a replay of the same log, or one deployment's serve runs."""
    if a.kind != b.kind:
        return False
    if a.settings.get("log"):
        return _log_bytes(a) == _log_bytes(b) and all(a.settings.get(k) == b.settings.get(k) for k in _READ_ALIKE)
    return a.name is not None and a.name == b.name


def _log_bytes(run: Run) -> str | None:
    """The log's sha256 as the run recorded it, else (a run made before fingerprints) its path."""
    fingerprint = run.settings.get("log_fingerprint")
    if isinstance(fingerprint, dict) and fingerprint.get("sha256"):
        return f"sha256:{fingerprint['sha256']}"
    log = run.settings.get("log")
    return f"path:{log}" if log else None


def _row(s: Summary, this: bool) -> HistoryRow:
    # (the candidate as the run's own report names it, in its table of sides)
    candidate = next((r for r in side_rows(s) if r["side"] == Side.CANDIDATE), {})
    url, model = candidate.get("url", "—"), candidate.get("model", "—")
    tally = s.token_agreement or {}
    return HistoryRow(
        run_id=s.run_id, started=s.created_at, this=this, candidate=model if model != "—" else url,
        candidate_url=url, version=candidate.get("version", "—"),
        labels=", ".join(f"{k}={v}" for k, v in (s.settings.get("labels") or {}).items()),
        compared=s.comparable, changed_rate=s.changed_rate, substantive_rate=s.substantive_rate,
        noise_rate=s.noise_rate, token_agreement=tally.get("pooled") if tally.get("pairs") else None,
        kl_per_token=tally.get("kl_per_token") if tally.get("pairs") else None, errors=s.counts["errors"])


def history(store: Store, summary: Summary) -> list[HistoryRow]:
    """The newest ``HISTORY_RUNS`` runs of this run's prompts, oldest first, this one among them;
    empty when it is the only one (a table of one row compares nothing)."""
    this = store.run(summary.run_id)
    runs = [r for r in store.runs() if r.id == this.id or same_prompts(this, r)]
    if len(runs) < 2:
        return []
    newest = runs[-HISTORY_RUNS:]
    if this not in newest:   # (a report of an old run still shows it, beside the newest others)
        newest = sorted([this, *runs[-(HISTORY_RUNS - 1):]], key=lambda r: r.created_at)
    return [_row(summary, True) if r.id == this.id else _row(summarize(store, r.id), False) for r in newest]
