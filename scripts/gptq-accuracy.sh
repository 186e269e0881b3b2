#!/usr/bin/env bash
# KL(float || quantized) of RTN, GPTQ and SmoothQuant+GPTQ on stories260K (or MODEL), with calibration and evaluation
# tokens the model samples itself (temperature 1, different seeds), as docs/quant.md ("GPTQ and SmoothQuant") reports.
# Usage: scripts/gptq-accuracy.sh [BUILD_DIR] [MODEL]   (prints one line per configuration)
set -euo pipefail
BUILD=${1:-build/ci}
MODEL=${2:-tests/data/model/stories260K}
L="$BUILD/lmkit"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$L" generate "$MODEL" --prompt-ids 1 --max-tokens 255 --temperature 1 --seed 11 --samples 64 -o "$T/calib.bin" >/dev/null
"$L" generate "$MODEL" --prompt-ids 1 --max-tokens 255 --temperature 1 --seed 22 --samples 32 -o "$T/eval.bin" >/dev/null
run() {  # NAME, quantize flags...
  local name=$1
  shift
  "$L" quantize "$MODEL" -o "$T/$name" --json "$@" >"$T/$name.json"
  local kl
  kl=$("$L" eval "$MODEL" --compare "$T/$name" --tokens "$T/eval.bin" --seq-len 256 --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); c=j["compare"]; print("KL %.6g  top1 %.4f  ppl_delta %+.4f" % (c["mean_kl"], c["top1_agreement"], c["ppl_delta"]))')
  local err
  err=$(python3 -c '
import json,sys
j=json.load(open(sys.argv[1]))
g=[t["gptq_error"] for t in j["tensors"] if "gptq_error" in t]
r=[t["rtn_error"] for t in j["tensors"] if "gptq_error" in t]
a=j.get("smoothquant_alpha")
s=("  sum rel. recon. error gptq %.4g rtn %.4g (%.2fx)" % (sum(g), sum(r), sum(r)/sum(g))) if g else ""
print(s + ("  alpha %.2f" % a if a is not None else ""))' "$T/$name.json")
  printf '%-28s %s%s\n' "$name" "$kl" "$err"
}
C=(--calibration-tokens "$T/calib.bin" --seq-len 256)
run w8a8-rtn --scheme w8a8
run w8a8-gptq --scheme w8a8 --method gptq "${C[@]}"
run w8a8-gptq-no-actorder --scheme w8a8 --method gptq --no-act-order "${C[@]}"
run w8a8-sq0.8-rtn --scheme w8a8 --smoothquant 0.8 "${C[@]}"
run w8a8-sq0.8-gptq --scheme w8a8 --smoothquant 0.8 --method gptq "${C[@]}"
run w8a8-sqauto-gptq --scheme w8a8 --smoothquant auto --method gptq "${C[@]}"
run w8a16-rtn --scheme w8a16
run w8a16-gptq --scheme w8a16 --method gptq "${C[@]}"
