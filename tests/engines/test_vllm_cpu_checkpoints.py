"""The tier's own checkpoints: the GGUF converted to a Hugging Face checkpoint, and the W8A8
FP8 and INT8 checkpoints written by tests/support/vllm_cpu_checkpoints.py, checked as files (in the
vLLM environment, which has torch) and as vLLM loads and serves them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.vllm_cpu import Checkpoints, Server, Spec, serving

pytestmark = pytest.mark.vllmcpu

# Run in the vLLM environment: every quantized Linear weight against the fp32 original.
_CHECK = """
import json, sys, torch
from safetensors.torch import load_file
source, quantized = sys.argv[1:]
original = load_file(source + "/model.safetensors")
written = load_file(quantized + "/model.safetensors")
report = {"quantized": 0, "worst": 0.0, "dtypes": set(), "scale_shapes_ok": True,
          "lm_head": "lm_head.weight" in written}
held = set()
for name in [n for n in written if n.endswith(".weight_scale")]:
    weight_name = name.removesuffix("_scale")
    held |= {name, weight_name}
    w, scale = written[weight_name], written[name]
    report["dtypes"].add(str(w.dtype))
    report["scale_shapes_ok"] &= tuple(scale.shape) == (w.shape[0], 1) and scale.dtype == torch.float32
    ref = original[weight_name].to(torch.float32)
    # the error of each value, in units of its row's largest magnitude
    error = (w.to(torch.float32) * scale - ref).abs() / ref.abs().amax(dim=1, keepdim=True)
    report["worst"] = max(report["worst"], error.max().item())
    report["quantized"] += 1
report["others"] = sorted({str(t.dtype) for n, t in written.items() if n not in held})
report["dtypes"] = sorted(report["dtypes"])
print(json.dumps(report))
"""


@pytest.mark.parametrize(("kind", "dtype", "worst"), [
    # e4m3 keeps 3 mantissa bits: each value within 1/16 of itself, so within 1/16 of its row's largest
    ("fp8", "torch.float8_e4m3fn", 1 / 16),
    # int8: within half a step, a step being the row's largest over 127
    ("int8", "torch.int8", 0.5 / 127 + 1e-6),
])
def test_w8a8_checkpoints_hold_every_linear_weight_to_within_one_step(
        vllm_python: Path, vllm_checkpoints: Checkpoints, kind: str, dtype: str, worst: float) -> None:
    quantized = vllm_checkpoints.w8a8_fp8 if kind == "fp8" else vllm_checkpoints.w8a8_int8
    done = subprocess.run([str(vllm_python), "-c", _CHECK, str(vllm_checkpoints.hf), str(quantized)],
                          capture_output=True, text=True, timeout=600, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    config = json.loads((vllm_checkpoints.hf / "config.json").read_text())
    assert report["quantized"] == 7 * config["num_hidden_layers"]
    assert report["dtypes"] == [dtype] and report["scale_shapes_ok"] and not report["lm_head"]
    assert report["others"] == ["torch.bfloat16"]
    assert 0 < report["worst"] <= worst, report
    scheme = json.loads((quantized / "config.json").read_text())["quantization_config"]
    assert scheme["quant_method"] == "compressed-tensors" and scheme["ignore"] == ["lm_head"]
    assert scheme["format"] == ("float-quantized" if kind == "fp8" else "int-quantized")
    assert (quantized / "chat_template.jinja").exists()


@pytest.fixture(scope="module")
def quantized(vllm_python: Path, vllm_checkpoints: Checkpoints,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    specs = (Spec("w8a8-int8"), Spec("w8a8-fp8"))
    with serving(vllm_python, vllm_checkpoints, specs, tmp_path_factory.mktemp("w8a8"), lean=True) as (int8, fp8):
        yield int8, fp8


def test_vllm_serves_both_w8a8_checkpoints_with_its_quantized_kernels(quantized: tuple[Server, Server]) -> None:
    int8, fp8 = quantized
    # W8A8 FP8 is slow here (its fast kernels need AMX): a chat prompt (the template's 30-odd
    # tokens) and 8 tokens took 10 minutes beside the other servers, a 4-token completion of one
    # token 76 s; INT8 gives a chat answer
    for server, scheme in ((int8, "CompressedTensorsW8A8Int8"), (fp8, "CompressedTensorsW8A8Fp8")):
        log = server.log.read_text()
        assert "quantization=compressed-tensors" in log and f"for {scheme}" in log, scheme
        if server is int8:
            response = httpx.post(server.url + "/v1/chat/completions", timeout=600, json={
                "model": server.model, "messages": [{"role": "user", "content": "What is 2+2?"}], "temperature": 0,
                "max_tokens": 8})
        else:
            response = httpx.post(server.url + "/v1/completions", timeout=600, json={
                "model": server.model, "prompt": "2 + 2 =", "temperature": 0, "max_tokens": 1})
        response.raise_for_status()
        answer = response.json()
        choice = answer["choices"][0]
        assert answer["model"] == server.model and (choice.get("text") or choice.get("message", {}).get("content"))
        assert answer["usage"]["completion_tokens"] > 0
