"""``shadowdiff simulate``: a test double of the vLLM OpenAI-compatible server.

No GPU and no model weights are available where shadowdiff is developed and tested,
so everything (tests, the demo, benchmarks) runs against this simulator. It follows
the wire format of vLLM 0.34 (tests/conformance/ holds it to vLLM's own models) and
produces synthetic, template-built text. It is not a model and never claims to be one.

Why a package of its own rather than a part of ``proxy`` or ``replay``: the proxy and
the replay client must work against real vLLM, so no production code path may import
the simulator; keeping it apart makes that a property of the import graph. It still
ships in the distribution because ``shadowdiff simulate`` and ``shadowdiff demo`` are
user-facing commands.

Modules, in the order a request meets them: ``settings`` (flags), ``app`` (routes),
``intake`` (a request to a job), ``validation`` (request bodies and their checks),
``prompts`` (chat template), ``vocab`` (tokens),
``baseline_text`` (the baseline answer), ``thinking`` (a reasoning model's ``<think>``),
``tools`` (the tool calls it makes), ``gradable``, ``questions``, ``passages`` and
``arithmetic`` (questions with one exact answer, which ``graded`` answers right or wrong
at ``--accuracy``), ``profiles`` and ``drift`` (how a candidate's answer differs),
``sampling`` (sampling, stops, lengths), ``logprobs``, ``teacher`` (the prompt
logprobs of a given answer, teacher-forced: where it leaves this server's own answer,
and how confidently), ``delivery`` (running a job and writing its answer),
``scheduler`` (latency model), ``faults``, ``parsers`` (vLLM's reasoning and tool parsers),
``bodies`` and ``streaming`` (wire shapes), ``metrics``; ``server`` runs the app under
uvicorn; ``expected`` tells tests what a server does to a request's answer without asking it.
"""
