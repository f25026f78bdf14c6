"""The replay mode: ``shadowdiff replay``, ``compare``, ``bench`` and ``demo``.

Reading captured prompt logs (``logs``), driving both sides through them (``runner``,
after ``preflight`` has asked each side what it serves), benchmarking both sides
(``bench``), comparing files of saved answers (``answers``, ``offline``), the demo on
simulated servers (``demo``), and their commands (``cli``). Comparison, the store
and the reports are the core's (``shadowdiff``); this package never imports
``proxy``, and only the demo starts the simulator.
"""
