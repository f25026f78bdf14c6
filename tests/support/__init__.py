"""What the tests share: fixtures (plugins of tests/conftest.py), servers, clients, builders of
stores and runs, and the real engines' builds. No test module imports another test module."""
