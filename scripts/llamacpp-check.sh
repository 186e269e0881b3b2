#!/usr/bin/env bash
# Loads `lmkit quantize --format gguf-q8_0` output in llama.cpp itself and compares what llama.cpp computes with lmkit's
# own float forward on the same dequantized weights. Not part of CI: llama.cpp is built once from PyPI (the sdist of
# llama-cpp-python carries its source; scripts/llamacpp/build.sh, cached in LLAMACPP_CACHE), and llama.cpp's own
# Python GGUF reader (`gguf`, PyPI) reads the file too.
#
# Steps: quantize MODEL (default: tests/data/model/stories260K) to GGUF; tests/scripts/check_gguf.py checks the file
# and writes the dequantized weights as a float checkpoint; gguf's GGUFReader lists the same tensors (names, types,
# shapes) and its Q8_0 dequantization equals check_gguf.py's; llama.cpp's own quantizer (llama_model_quantize) turns an
# unquantized GGUF of the same model (scripts/llamacpp/write_gguf.py) into Q8_0, and every tensor both files hold in
# Q8_0 is compared byte for byte; llama.cpp greedy-decodes from BOS and scores the golden sequence with lmkit's file
# and with the unquantized one; `lmkit generate` does the same on the dequantized checkpoint. Prints one JSON line
# (with the versions used); exit 1 when llama.cpp cannot load the file, gguf reads it differently, a Q8_0 tensor
# differs from llama.cpp's, or the first 8 greedy tokens differ from lmkit's on the same weights.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${MODEL:-tests/data/model/stories260K}
golden=${GOLDEN:-$model/golden_greedy.json}
lmkit=${LMKIT:-build/release/lmkit}
py=/usr/bin/python3
[ -x "$lmkit" ] || { echo "llamacpp-check: build lmkit first ($lmkit)" >&2; exit 1; }
cache=$(bash scripts/llamacpp/build.sh)
# shellcheck disable=SC1091
. "$cache/llamacpp.env"
bins=$LLAMACPP_LIB
runner=$cache/run_gguf

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$lmkit" quantize "$model" -o "$work/model.gguf" --format gguf-q8_0 --json >"$work/report.json"
mkdir "$work/deq"
cp "$model/config.json" "$work/deq/"
$py tests/scripts/check_gguf.py "$model" "$work/model.gguf" --dequantized "$work/deq/model.safetensors" \
  >"$work/check.json"
$py scripts/llamacpp/write_gguf.py "$model" "$work/float.gguf"
"$cache/quantize_gguf" "$work/float.gguf" "$work/llamacpp_q8_0.gguf" 2 >/dev/null
"$GGUF_PYTHON" scripts/llamacpp/read_gguf.py "$work/model.gguf" >"$work/gguf_reader.json"
ids=$($py -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$golden")
n=$(wc -w <<<"$ids")
"$runner" "$work/model.gguf" "$bins" $((n - 1)) 1 >"$work/ll_greedy.json"
"$runner" "$work/model.gguf" "$bins" 1 $ids >"$work/ll_score.json"
"$runner" "$work/float.gguf" "$bins" $((n - 1)) 1 >"$work/fl_greedy.json"
"$runner" "$work/float.gguf" "$bins" 1 $ids >"$work/fl_score.json"
"$lmkit" generate "$work/deq" --prompt-ids 1 --max-tokens $((n - 1)) --json >"$work/lm_greedy.json"
"$lmkit" generate "$work/deq" --prompt-ids "${ids// /,}" --max-tokens 1 --json --logits >"$work/lm_score.json"
$py - "$work" "$golden" "$LLAMA_CPP_PYTHON_VERSION" "$LLAMACPP_VERSION $LLAMACPP_COMMIT" "$GGML_VERSION" "$GGUF_VERSION" <<'PY'
import json, sys
sys.path.insert(0, "tests/scripts")
import check_gguf
w, golden = sys.argv[1], json.load(open(sys.argv[2]))
versions = {"llama-cpp-python (sdist)": sys.argv[3], "llama.cpp": sys.argv[4], "ggml": sys.argv[5],
            "gguf": sys.argv[6]}
reader = json.load(open(w + "/gguf_reader.json"))
ll_g, ll_s = json.load(open(w + "/ll_greedy.json")), json.load(open(w + "/ll_score.json"))
lm_g, lm_s = json.load(open(w + "/lm_greedy.json")), json.load(open(w + "/lm_score.json"))
def prefix(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k
fl_g, fl_s = json.load(open(w + "/fl_greedy.json")), json.load(open(w + "/fl_score.json"))
lm_tokens = lm_g["sequences"][0]
_, ours = check_gguf.read_gguf(w + "/model.gguf")
_, theirs = check_gguf.read_gguf(w + "/llamacpp_q8_0.gguf")
both = [n for n, (_, t, _) in ours.items() if t == 8 and theirs[n][1] == 8]
differ = [n for n in both if ours[n][2] != theirs[n][2]]
res = {
    "versions": versions,
    "gguf_reader": reader,
    "q8_0_tensors_compared_with_llama_model_quantize": len(both),
    "q8_0_tensors_differing": differ,
    "check_gguf": json.load(open(w + "/check.json")),
    "sequence_length": len(golden["tokens"]),
    "greedy_prefix_llamacpp_vs_lmkit_same_weights": prefix(ll_g["tokens"], lm_tokens),
    "greedy_prefix_llamacpp_vs_golden_float64": prefix(ll_g["tokens"], golden["tokens"]),
    "greedy_prefix_lmkit_dequantized_vs_golden_float64": prefix(lm_tokens, golden["tokens"]),
    "next_token_same": ll_s["tokens"][-1] == lm_s["sequences"][0][-1],
    "final_logits_max_abs_diff_llamacpp_vs_lmkit": max(abs(a - b) for a, b in zip(ll_s["final_logits"],
                                                                                   lm_s["final_logits"])),
    "unquantized_gguf_greedy_prefix_vs_golden_float64": prefix(fl_g["tokens"], golden["tokens"]),
}
ok = res["greedy_prefix_llamacpp_vs_lmkit_same_weights"] >= 8 and both and not differ and reader["ok"]
res["ok"] = bool(ok)
print(json.dumps(res))
sys.exit(0 if ok else 1)
PY
