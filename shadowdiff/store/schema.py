"""The store's tables as they are now (migrations build them; queries use these)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

SCHEMA_VERSION = "0015"

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),            # replay, compare, serve
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("settings", JSON, nullable=False),
    # a serve run shared by several processes (0008): its deployment's name and a digest
    # of its settings; at most one open run per (name, digest)
    Column("name", String(255)),
    Column("digest", String(64)),
    Index("uq_runs_open_name", "name", "digest", unique=True,
          sqlite_where=text("finished_at IS NULL"), postgresql_where=text("finished_at IS NULL")),
)

# The processes writing to a shared run (0008): each beats its heart while it serves, and
# marks itself finished when it stops (ended: stopped; lost: found without a heartbeat;
# forced: closed by `shadowdiff close --force` while its heart still beat).
run_members = Table(
    "run_members", metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("member", String(64), primary_key=True),     # the prefix of the pair keys it writes
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("heartbeat_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("ended", String(16)),
    # (0013) the requests it held that its run had not counted yet, at its last heartbeat:
    # added to the run's counts as lost (NOT_COMPARED, LOST) if it is found lost
    Column("in_flight", Integer, nullable=False, server_default="0"),
)

pairs = Table(
    "pairs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("key", String(255), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("category", String(255)),
    Column("endpoint", String(64), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("request", JSON, nullable=False),
    Column("comparable", Boolean, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("similarity", Float),
    Column("similarity_estimated", Boolean),   # (0015) a lower bound, not the exact ratio (megabyte rewrites)
    Column("difflib_ratio", Float),
    Column("first_char", Integer),
    Column("first_token", Integer),
    Column("length_ratio", Float),
    Column("margin", Float),
    Column("noise_outcome", String(16)),
    Column("noise_similarity", Float),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # triage (0002)
    Column("signals", JSON),
    Column("suggested", String(16)),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("claimed_by", String(255)),
    Column("claimed_until", DateTime(timezone=True)),
    Column("judge_verdict", String(16)),
    Column("judge_wrong_side", String(16)),   # factual: the wrong side; minor/improvement: the worse one
    Column("judge_reason", Text),
    Column("judge_blind", Boolean),           # (0010) true: the judge saw the page's A/B order; null: before
    # (0012) the candidate's and the replica's teacher-forced scores of the baseline's answer
    # (shadowdiff.triage.scoring), the candidate's token agreement alone, and the graded answers
    # with the pair's flip (correct_to_wrong, wrong_to_correct; shadowdiff.triage.grading)
    Column("score", JSON),
    Column("noise_score", JSON),
    Column("token_agreement", Float),
    Column("grade", JSON),
    Column("flip", String(16)),
    UniqueConstraint("run_id", "key", name="uq_pairs_run_key"),
    Index("ix_pairs_run_outcome", "run_id", "outcome"),
    Index("ix_pairs_run_seq_id", "run_id", "seq", "id"),   # (0014) log order: Store.pairs pages by (seq, id)
    Index("ix_pairs_run_priority", "run_id", "priority"),
    Index("ix_pairs_run_created", "run_id", "created_at", "id"),     # retention (0009): a run's oldest first
)

answers = Table(
    "answers", metadata,
    Column("pair_id", Integer, ForeignKey("pairs.id", ondelete="CASCADE"), primary_key=True),
    Column("side", String(16), primary_key=True),
    Column("model", String(255)),
    Column("status", Integer),
    Column("error", Text),
    Column("text", Text, nullable=False),
    Column("finish_reason", String(32)),
    Column("prompt_tokens", Integer),
    Column("completion_tokens", Integer),
    Column("ttft", Float),
    Column("ttfat", Float),           # to the first answer token, after any thinking
    Column("ttlt", Float),            # to the last generated token (0007): streamed answers only
    Column("token_source", String(16)),   # (0011) where completion_tokens came from: usage, logprobs, stream
    Column("choice_count", Integer),  # completion_tokens counts them all: tokens/s is per choice
    Column("duration", Float),
    Column("attempts", Integer, nullable=False),
    Column("tokens", JSON),
    Column("margins", JSON),
    Column("tool_calls", JSON),
    Column("reasoning", Text),
    Column("refusal", Text),
    Column("reasoning_tokens", Integer),
    Column("other_choices", JSON(none_as_null=True)),   # after the first: [{"index", "text", "reasoning", ...}]
)

reviews = Table(
    "reviews", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pair_id", Integer, ForeignKey("pairs.id", ondelete="CASCADE"), nullable=False),
    Column("reviewer", String(255), nullable=False),
    Column("verdict", String(16), nullable=False),
    # the side the verdict goes against (0010: every directional verdict has one):
    # factual: the wrong side; minor: the worse side; improvement: the worse side (the other is better)
    Column("wrong_side", String(16)),
    Column("note", Text, nullable=False, server_default=""),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_reviews_pair", "pair_id"),
)

# Reviewer identities (0010): a token per reviewer, kept as its SHA-256 digest.
reviewers = Table(
    "reviewers", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("token_digest", String(64), nullable=False, unique=True),
    Column("admin", Boolean, nullable=False, server_default=text("false")),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
)

secrets = Table(
    "secrets", metadata,
    # blind_key: the review UI's A/B order; session_key (0010): signs reviewers' sessions
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# What a run saw, whether or not each pair was stored: the proxy keeps identical,
# sampled and failed pairs only at --keep-rate, so its rates come from these counts.
run_counts = Table(
    "run_counts", metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("of", String(16), primary_key=True),            # pairs (candidate) or noise (replica)
    Column("outcome", String(16), primary_key=True),
    Column("comparable", Boolean, primary_key=True),
    Column("pairs", Integer, nullable=False),
)

skipped = Table(
    "skipped", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("line", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    Index("ix_skipped_run", "run_id"),
)


# What retention deleted (0009): pairs of serve runs, never reviewed ones, counted per
# run by outcome, so that the acceptance verdict still counts the pairs that needed a
# verdict and were deleted without one (shadowdiff.store.prune).
pruned = Table(
    "pruned", metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("outcome", String(16), primary_key=True),
    Column("comparable", Boolean, primary_key=True),
    Column("pairs", Integer, nullable=False),
)
