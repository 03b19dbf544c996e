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

from tokenizers import normalizers, processors
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

    # transformers builds the GGUF tokenizer with a Metaspace pre-tokenizer (prepend "first"),
    # which drops SentencePiece's extra "▁" before text that starts with spaces (" hello" is 1
    # token there, 2 in llama.cpp). Llama-2's own tokenizer.json normalizes instead (prepend "▁",
    # spaces → "▁"), which matches llama.cpp token for token, so use that.
    backend = tok.backend_tokenizer
    backend.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
    )
    backend.pre_tokenizer = None

    bos = tok.bos_token
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.bos_token_id)]
    )
    tok.add_bos_token = True
    if not getattr(tok, "chat_template", None):
        sys.exit("convert_model.py: the GGUF carried no chat template")
    # llama.cpp tokenizes a rendered chat prompt with BOS; vLLM renders then tokenizes without
    # special tokens, so the BOS must come from the template for both to count the same tokens.
    if "bos_token" not in tok.chat_template:
        tok.chat_template = "{{ bos_token }}" + tok.chat_template
    tok.save_pretrained(out)
    # Spot checks against what llama.cpp's /tokenize (add_special) returns for the same model.
    expect = {"Hello world": [1, 15043, 3186], " hello hello": [1, 29871, 22172, 22172],
              "  two  spaces": [1, 259, 1023, 29871, 8162]}
    for text, ids in expect.items():
        got = tok(text)["input_ids"]
        if got != ids:
            sys.exit(f"convert_model.py: {text!r} -> {got}, llama.cpp gives {ids}")
        if tok.decode(got, skip_special_tokens=True) != text:
            sys.exit(f"convert_model.py: {text!r} does not round-trip: "
                     f"{tok.decode(got, skip_special_tokens=True)!r}")
    chat = tok.apply_chat_template([{"role": "user", "content": "Say hello"}],
                                   add_generation_prompt=True, tokenize=False)
    chat_ids = tok(chat, add_special_tokens=False)["input_ids"]
    if len(chat_ids) != 31 or chat_ids[0] != tok.bos_token_id:  # llama.cpp: prompt_tokens 31
        sys.exit(f"convert_model.py: chat prompt is {len(chat_ids)} tokens, llama.cpp counts 31")
    print(f"[convert_model] saved {out}; tokenization matches llama.cpp", file=sys.stderr)


if __name__ == "__main__":
    main()
