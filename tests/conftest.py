"""The tests' shared fixtures and hooks are plugins in tests/support/; this registers them for
every test (pytest allows ``pytest_plugins`` in the root conftest.py only)."""

pytest_plugins = [
    "tests.support.bytecode",              # the run caches bytecode, whatever PYTHONDONTWRITEBYTECODE says
    "tests.support.distribution",          # -n auto: which tests share a worker; no timed property test
    "tests.support.clients",               # httpx clients share one default TLS context
    "tests.support.fixtures",              # simulators, proxies, stores; SIGTERM unwinds as Ctrl+C
    "tests.support.proxying",              # backends, location: `shadowdiff serve` as a process
    "tests.support.replaying",             # sides: three simulators for replay
    "tests.support.demo",                  # demo: `shadowdiff demo` run once per session
    "tests.support.browsers",              # browser: headless Chromium
    "tests.support.conformance.fixtures",  # oracle: vLLM's own models (tests/conformance)
    # the real-engine tiers (llama.cpp: f16, q8, f16_replica; vLLM: its environment, checkpoints and
    # test order; its servers, vllm, are in tests/engines/conftest.py)
    "tests.support.realengine",
    "tests.support.vllm_cpu",
]
