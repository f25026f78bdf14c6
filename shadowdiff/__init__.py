"""shadowdiff: did a change to an LLM deployment change what the model says?

The distribution ships four import packages (README, "Layout"):

* ``shadowdiff`` - the core both modes share: the answer records (``records``),
  reading OpenAI-style answers (``parse``) and calling an OpenAI-compatible server
  (``client``), comparison (``compare``, ``diffview``), triage (``signals``),
  redaction (``redact``), the store and its migrations (``store``), the review UI
  (``review``), the LLM judge (``judge``), the reports (``summary``, ``reports``),
  the acceptance verdict (``acceptance``), the commands that work on a store
  (``commands``: ``report``, ``judge``, ``review``), and the ``shadowdiff`` command
  line that gathers every package's commands (``cli``);
* ``proxy``      - the mirror mode: ``shadowdiff serve``;
* ``replay``     - the replay mode: ``shadowdiff replay``, ``compare``, ``bench``, ``demo``;
* ``simulator``  - ``shadowdiff simulate``, a test double of the vLLM OpenAI server.

Imports run one way: ``proxy`` and ``replay`` use the core, never each other, and
the core uses neither (``cli``, the composition root, names their commands and
imports each only when it runs). No production path imports ``simulator``; only
the demo starts it. ``tests/test_layout.py`` reads the imports and checks this.
"""

__version__ = "0.1.0"
