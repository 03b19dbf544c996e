#!/usr/bin/env python3
"""Convert the tiny llama GGUF into a plain Hugging Face model directory for vLLM.

    convert_model.py MODEL.gguf OUT_DIR

transformers dequantizes the GGUF (and undoes llama.cpp's Q/K permutation), so the saved
safetensors model computes the same function as the GGUF. The tokenizer is saved as
tokenizer.json with a post-processor that prepends BOS, as llama.cpp does for string prompts,
so both engines count the same prompt tokens. The ChatML template is carried over.
"""

import sys
from pathlib import Path

from tokenizers import processors
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    gguf_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # A plain model, not tied to the GGUF loader: copy the weights into a fresh instance whose
    # config no longer says `quant_method: gguf` (vLLM would otherwise try to load a GGUF).
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(model.state_dict())
    plain.save_pretrained(out, safe_serialization=True)

    bos = tok.bos_token
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.bos_token_id)]
    )
    tok.add_bos_token = True
    if not getattr(tok, "chat_template", None):
        sys.exit("convert_model.py: the GGUF carried no chat template")
    tok.save_pretrained(out)
    check = tok("Hello world")["input_ids"]
    print(f"[convert_model] saved {out}; 'Hello world' -> {check}", file=sys.stderr)
    if check[0] != tok.bos_token_id:
        sys.exit("convert_model.py: BOS is not prepended")


if __name__ == "__main__":
    main()
