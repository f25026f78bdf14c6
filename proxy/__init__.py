"""The mirror mode, ``shadowdiff serve``: an OpenAI-compatible shadow proxy.

Forwarding to the primary (``forward``, ``tap``), mirroring to the shadow and the
replica (``mirroring``, ``shadow``), making pairs of what both answered (``pairs``),
capturing requests for later replay (``capture``), its metrics, settings, app, server
and command. Comparison, signals, the store and the review UI are the core's
(``shadowdiff``); this package never imports ``replay`` or ``simulator``.
"""
