"""The bundled workloads (``demo.jsonl``, ``gradable.jsonl``) and the generator of the gradable one."""
