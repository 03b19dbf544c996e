#!/usr/bin/env python3
"""Writes LoRA adapters (PEFT format) for the tiny test model, for the real-vLLM LoRA check.

    make_lora.py MODEL_DIR OUT_DIR NAME [NAME ...]

Each NAME becomes OUT_DIR/NAME with `adapter_config.json` and `adapter_model.safetensors`: rank 8
on every layer's `q_proj` and `v_proj`, shaped from MODEL_DIR/config.json, with seeded random
weights (a different seed per name). Nothing is downloaded: the model is the one
scripts/vllm/install.sh generated, so an adapter trained elsewhere could never fit it. Run with
vLLM's interpreter (it has torch and safetensors).
"""
import json
import os
import sys
import zlib

import torch
from safetensors.torch import save_file

RANK = 8


def main() -> None:
    model_dir, out_dir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not names:
        sys.exit("usage: make_lora.py MODEL_DIR OUT_DIR NAME [NAME ...]")
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    hidden = cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or hidden // cfg["num_attention_heads"]
    outs = {
        "q_proj": cfg["num_attention_heads"] * head_dim,
        "v_proj": cfg["num_key_value_heads"] * head_dim,
    }
    for name in names:
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        tensors = {}
        for layer in range(cfg["num_hidden_layers"]):
            for module, out in outs.items():
                key = f"base_model.model.model.layers.{layer}.self_attn.{module}"
                tensors[f"{key}.lora_A.weight"] = torch.randn(RANK, hidden, generator=gen) * 0.01
                tensors[f"{key}.lora_B.weight"] = torch.randn(out, RANK, generator=gen) * 0.01
        path = os.path.join(out_dir, name)
        os.makedirs(path, exist_ok=True)
        save_file(tensors, os.path.join(path, "adapter_model.safetensors"))
        config = {
            "base_model_name_or_path": model_dir,
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "r": RANK,
            "lora_alpha": 2 * RANK,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": False,
            "target_modules": sorted(outs),
            "modules_to_save": None,
        }
        with open(os.path.join(path, "adapter_config.json"), "w") as f:
            json.dump(config, f, indent=2)
        print(path)


if __name__ == "__main__":
    main()
