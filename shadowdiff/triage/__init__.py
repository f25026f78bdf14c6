"""Triage: why two answers differ, and how the candidate reads the baseline's own answer."""
