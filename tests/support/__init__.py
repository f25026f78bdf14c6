"""What the tests share: fixtures (plugins of tests/conftest.py), servers, clients, stores, runs, engine builds.

No test module imports another test module or a conftest.py: what two need is here."""
