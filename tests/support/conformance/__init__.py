"""The conformance tier's environment (vLLM's wheel in a venv of its own), the oracle that runs
in it, and the fixture that talks to it."""
