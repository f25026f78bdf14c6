"""The replay mode: ``shadowdiff replay``, ``compare``, ``bench`` and ``demo``.

Reading captured prompt logs (``logs``), driving both sides through them (``runner``,
after ``preflight`` has asked each side what it serves), benchmarking both sides
(``bench``), comparing files of saved answers (``answers``, ``offline``), the demo on
simulated servers (``demo``), and their commands (``cli``); ``workloads`` holds the
bundled logs and the generator of the gradable one. Comparison, the store and the
reports are the core's (``shadowdiff``); this package never imports ``proxy``, only
the demo starts the simulator, and only the gradable workload's generator (a tool run
by hand) borrows the simulator's question templates.
"""
