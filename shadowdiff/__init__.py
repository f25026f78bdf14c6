"""shadowdiff: did a change to an LLM deployment change what the model says?

The distribution ships four packages (see README, "Layout"):

* ``shadowdiff`` - the command line and what every part shares (errors, version);
* ``proxy``      - the shadow proxy and the core it shares with replay;
* ``replay``     - reading captured logs, driving both sides, reports;
* ``simulator``  - ``shadowdiff simulate``, a test double of the vLLM OpenAI server.
"""

__version__ = "0.1.0"
