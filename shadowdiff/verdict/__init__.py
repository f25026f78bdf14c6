"""The verdict: the gates a run is held to and the decision over its counts."""
