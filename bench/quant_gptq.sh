#!/usr/bin/env bash
# GPTQ + SmoothQuant W8A8 speed and memory (issue #40; a benchmark, not a test): lmkit's whole
# `quantize --scheme w8a8 --method gptq --smoothquant 0.8` process against llm-compressor's whole `oneshot` process
# (SmoothQuantModifier(0.8) + GPTQModifier(W8A8, ignore lm_head); bench/quant_gptq_llmc.py) on the same generated fp32
# Llama (default the ~125M shape: hidden 768, 12 layers, heads 12 / kv 4, intermediate 2048, vocab 32000) and the same
# SAMPLES x SEQ_LEN calibration tokens, THREADS threads each (lmkit --threads, torch.set_num_threads). Each process
# runs under /usr/bin/time -v: wall, user+sys CPU seconds and peak RSS. On a shared machine wall time also measures the
# other tenants: read CPU seconds beside it.
# Environment: LMKIT (default build/release/lmkit), LLMC_PY (default ~/.cache/lmkit-llmcompressor-venv/bin/python),
# HEAVY (a python with numpy; default ~/.cache/lmkit-heavy-venv/bin/python), WORK (default /tmp/lmkit-gptq-bench, kept),
# SAMPLES (128), SEQ_LEN (512), THREADS (2). Prints one line per tool and writes WORK/result.txt.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
LMKIT=${LMKIT:-$REPO/build/release/lmkit}
LLMC_PY=${LLMC_PY:-$HOME/.cache/lmkit-llmcompressor-venv/bin/python}
HEAVY=${HEAVY:-$HOME/.cache/lmkit-heavy-venv/bin/python}
WORK=${WORK:-/tmp/lmkit-gptq-bench}
SAMPLES=${SAMPLES:-128}
SEQ_LEN=${SEQ_LEN:-512}
THREADS=${THREADS:-2}
[ -x "$LMKIT" ] || { echo "bench/quant_gptq.sh: build lmkit first ($LMKIT)" >&2; exit 1; }
M=$WORK/llama125m
mkdir -p "$WORK"
[ -f "$M/model.safetensors" ] || "$HEAVY" "$REPO/bench/gen_llama_model.py" "$M" F32 768 12 12 4 2048 32000 128 512 >&2
# gen_llama_model.py writes uint32 ids (what lmkit reads); both tools read the first SAMPLES windows of this copy.
"$HEAVY" -c "import numpy as n,sys; n.save(sys.argv[2], n.load(sys.argv[1]).astype(n.uint32)[:$SAMPLES*$SEQ_LEN])" \
  "$M/tokens.npy" "$WORK/calib.npy"
measure() {  # NAME CMD...: runs CMD under /usr/bin/time -v, prints NAME wall cpu peak_rss_MB
  local name=$1 log=$WORK/$1.time
  shift
  /usr/bin/time -v "$@" >"$WORK/$name.out" 2>"$log" || { head -5 "$log" >&2; exit 1; }
  awk -v n="$name" -F': ' '/Elapsed \(wall clock\)/{split($2,t,":"); w=(length(t)==3)?t[1]*3600+t[2]*60+t[3]:t[1]*60+t[2]}
    /User time/{u=$2} /System time/{s=$2} /Maximum resident/{r=$2}
    END{printf "%s wall_s=%.1f cpu_s=%.1f peak_rss_MB=%.0f\n", n, w, u+s, r/1024}' "$log"
}
rm -rf "$WORK/out_lmkit" "$WORK/out_llmc"
{
  measure lmkit "$LMKIT" --threads "$THREADS" --quiet quantize "$M" -o "$WORK/out_lmkit" --scheme w8a8 --method gptq \
    --smoothquant 0.8 --calibration-tokens "$WORK/calib.npy" --samples "$SAMPLES" --seq-len "$SEQ_LEN"
  measure llmcompressor "$LLMC_PY" "$REPO/bench/quant_gptq_llmc.py" "$M" "$WORK/calib.npy" "$SAMPLES" "$SEQ_LEN" \
    "$THREADS" "$WORK/out_llmc"
  echo "samples=$SAMPLES seq_len=$SEQ_LEN threads=$THREADS lmkit=$(cd "$REPO" && git rev-parse --short HEAD) $(tail -1 "$WORK/llmcompressor.out")"
} | tee "$WORK/result.txt"
