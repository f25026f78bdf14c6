"""Answers: what an OpenAI-compatible server said, read whole, and two of them compared."""
