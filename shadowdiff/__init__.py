"""shadowdiff: did a change to an LLM deployment change what the model says?

One installed package, in parts (docs/architecture.md draws them):

* the core, in layers, each importing only the ones before it: ``vocabulary`` and
  ``errors`` (the words and the errors every part shares); ``answers`` (reading and
  comparing what a server said); ``triage`` (why two answers differ); ``statistics``;
  ``store``; ``verdict`` (gates and the decision); ``report``; ``review`` (the review
  UI and the LLM judge); ``commands`` (the store's commands, shared options);
* the modes: ``shadowdiff.proxy`` (``serve``), ``shadowdiff.replay`` (``replay``,
  ``compare``, ``bench``, ``demo``) and ``shadowdiff.simulator`` (``simulate``, a test
  double of the vLLM OpenAI server), which use the core and never each other;
* ``cli``, the composition root, which names every mode's commands and imports one
  only when it runs.

``tests/test_layout.py`` reads the imports and checks this.
"""

__version__ = "0.1.0"
