"""The words shadowdiff decides with, each defined once.

A pair's sides, its outcome and the sets of outcomes the reports and the verdict speak
of; a reviewer's verdict and the same verdict read from the candidate's side; the
decision a run gets; and the run's counts of requests that made no pair, with why.

Each is a ``StrEnum`` (the decision an ``IntEnum``: it is an exit code): a member is
equal to the string it is stored and sent as, so the store, the JSON reports and the
metrics' labels hold plain strings, while the code compares members. A string literal
naming one of these belongs only where text is read or written (a request's JSON, a
form, a migration), never in a comparison.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Side(StrEnum):
    """The server an answer came from: the baseline, the candidate, or the baseline's
    replica (asked the same again: the noise floor)."""

    BASELINE = "baseline"
    CANDIDATE = "candidate"
    REPLICA = "replica"


class Outcome(StrEnum):
    """What a pair's comparison concluded, from most to least alike."""

    IDENTICAL = "identical"      # byte-for-byte equal
    EQUIVALENT = "equivalent"    # equal after normalization (``normalize``: prose whitespace, NFC)
    NEAR = "near"                # similarity at or above the near threshold
    DIVERGENT = "divergent"      # below it
    UNANSWERED = "unanswered"    # neither side gave an answer (cut by the token cap, or empty): nothing compared
    ERROR = "error"              # a side failed: nothing to compare


# One meaning per word, in every report: a pair *changed* when both sides answered and
# the answers are not byte-identical; it changed *in substance* when it is not even
# equivalent (formatting only). Those are the pairs a person must review.
CHANGED = (Outcome.EQUIVALENT, Outcome.NEAR, Outcome.DIVERGENT)
SUBSTANTIVE = (Outcome.NEAR, Outcome.DIVERGENT)
# the outcomes of a pair whose two answers were compared
ANSWERED = (Outcome.IDENTICAL, *CHANGED)
# the outcomes of a pair that compared nothing: a side failed, or neither answered
UNCOMPARED = (Outcome.ERROR, Outcome.UNANSWERED)


class Verdict(StrEnum):
    """A reviewer's call, under the rubric: is there a factual or numerical claim one
    side gets right and the other gets wrong?"""

    EQUIVALENT = "equivalent"      # the same answer
    WORDING = "wording"            # worded differently, same content
    MINOR = "minor"                # one side slightly worse (formatting, a repeated word, a cut): which
    AMBIGUOUS = "ambiguous"        # equally defensible readings
    FACTUAL = "factual"            # a fact or number wrong on one side (which): against the candidate, the blocker
    IMPROVEMENT = "improvement"    # one side clearly better, no fact wrong: which

    @property
    def directional(self) -> bool:
        """Whether the verdict names a side (stored as the side it goes against)."""
        return self in (Verdict.MINOR, Verdict.FACTUAL, Verdict.IMPROVEMENT)


class Standing(StrEnum):
    """A verdict read from the candidate's side: a directional verdict by the side it goes
    against, under its own name when that is the candidate's loss. Declared from the worst
    for the candidate to the best: when reviewers disagree on a pair, the verdict least
    favourable to the candidate stands."""

    FACTUAL = "factual"
    IMPROVEMENT_BASELINE = "improvement_baseline"   # the baseline clearly better
    MINOR = "minor"
    AMBIGUOUS = "ambiguous"
    WORDING = "wording"
    EQUIVALENT = "equivalent"
    MINOR_BASELINE = "minor_baseline"               # the baseline slightly worse
    IMPROVEMENT = "improvement"
    FACTUAL_BASELINE = "factual_baseline"           # the baseline factually wrong, the candidate right


class Decision(IntEnum):
    """What a run's verdict decided, as the exit code of ``shadowdiff report``."""

    PASS = 0
    FAIL = 1
    INCOMPLETE = 2


class Tally(StrEnum):
    """The run's counts besides its pairs' outcomes (the ``of`` column of the counts table)."""

    # A proxy's requests that made no pair, by why (``NotCompared``).
    NOT_COMPARED = "not_compared"
    # Requests a proxy did not mirror, by why (``NotMirrored``): traffic its run never checked.
    NOT_MIRRORED = "not_mirrored"
    # Pairs a proxy compared (and counted under ``pairs``) but could not store - its store
    # failed longer than its queue could hold, or it stopped first - by outcome: those that
    # needed a verdict can never get one.
    DROPPED = "dropped"
    # Comparable pairs whose two sides stopped at the token cap in the same choice, by
    # outcome (a serve run stores few identical pairs, so the share comes from these).
    CAPPED = "capped"


class NotCompared(StrEnum):
    """Why a proxy's request made no pair (each at most 16 characters: the counts table's
    column). ``NOT_COMPARED_REASONS`` says each in words; ``NOT_COMPARED_ERRORS`` are
    those that count against the run."""

    PRIMARY_FAILED = "primary_failed"
    PRIMARY_4XX = "primary_4xx"
    CLIENT_LEFT = "client_left"
    TOO_LARGE = "too_large"
    CANDIDATE_4XX = "candidate_4xx"
    CANDIDATE_LEFT = "candidate_left"
    DRAINED = "drained"
    LOST = "proxy_lost"
    PROXY_FAILED = "proxy_failed"


NOT_COMPARED_REASONS: dict[str, str] = {
    NotCompared.PRIMARY_FAILED: "the primary failed (5xx, a cut stream, or an answer that could not be read)",
    NotCompared.PRIMARY_4XX: "the primary refused the request (4xx)",
    NotCompared.CLIENT_LEFT: "the client left before the answer ended",
    NotCompared.TOO_LARGE: "the answer was too large to compare",
    NotCompared.CANDIDATE_4XX: "the candidate (the primary) refused the request (4xx)",
    NotCompared.CANDIDATE_LEFT: "the client left while the candidate (the primary) answered",
    NotCompared.DRAINED: "the proxy stopped before the answers were in (--drain-timeout)",
    NotCompared.LOST: "lost with a proxy killed while it served them (kill -9, out of memory)",
    NotCompared.PROXY_FAILED: "the proxy could not complete the pair (a fault of its own, logged)",
}
# Only a primary that failed counts against the run (as an error, like a replay's failed
# pair), and so does a candidate primary's 4xx or a client leaving it, and a pair the
# proxy stopped waiting for at shutdown (a shadow that never answered is a failed side);
# a client that left the baseline, a request the baseline refused (the client's 4xx) or
# an answer too long to hold say nothing about the candidate, and are only shown.
# Requests a proxy held when it was killed (``LOST``: its last heartbeat's in-flight
# count, added when it is found lost, store.members) were never checked: errors too, as
# are pairs the proxy failed to complete (``PROXY_FAILED``: an exception of its own).
NOT_COMPARED_ERRORS = (NotCompared.PRIMARY_FAILED, NotCompared.CANDIDATE_4XX, NotCompared.CANDIDATE_LEFT,
                       NotCompared.DRAINED, NotCompared.LOST, NotCompared.PROXY_FAILED)


class NotMirrored(StrEnum):
    """Why a proxy did not mirror a request; ``NOT_MIRRORED_REASONS`` says each in words."""

    SAMPLED_OUT = "sampled_out"
    IN_FLIGHT_BOUND = "in_flight_bound"
    PAIRS_BEHIND = "pairs_behind"
    TOO_LARGE = "too_large"
    UNPARSABLE = "unparsable"
    EXCLUDED = "excluded"
    PROXY_ERROR = "proxy_error"
    UPLOAD_CUT = "upload_cut"
    UNFORWARDABLE = "unforwardable"


NOT_MIRRORED_REASONS: dict[str, str] = {
    NotMirrored.SAMPLED_OUT: "left out by --sample-rate",
    NotMirrored.IN_FLIGHT_BOUND: "the shadow already had --max-shadow-in-flight requests",
    NotMirrored.PAIRS_BEHIND: "the proxy's CPU was behind with its pairs (comparing, triage): too many waited",
    NotMirrored.TOO_LARGE: "the request body was over --max-mirror-body",
    NotMirrored.UNPARSABLE: "the request body was not a JSON object",
    NotMirrored.EXCLUDED: "its model is in --exclude-model",
    NotMirrored.PROXY_ERROR: "the proxy failed to mirror it (a fault of its own, logged)",
    NotMirrored.UPLOAD_CUT: "the client left before its request had arrived whole",
    NotMirrored.UNFORWARDABLE: "the proxy refused it (a header value not in UTF-8)",
}

# The header shadowdiff's simulator sends on /version (and no real engine does): replay's
# preflight and the proxy's start-up read it, so that every report of a run against
# simulators says so.
SIMULATOR_HEADER = "X-Shadowdiff-Simulator"
