"""The conformance tier: vLLM's wheel in a venv of its own, the oracle run in it, the fixture that talks to it."""
