#!/usr/bin/env bash
# README's first command: install dependencies, build lmkit, and run its main jobs on shipped data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/configure.sh build/release -DCMAKE_BUILD_TYPE=Release -DLMKIT_TESTS=OFF
cmake --build build/release -j "$(nproc)"
lm=build/release/lmkit
out=$(mktemp -d /tmp/lmkit-quickstart.XXXXXX)
set -x
$lm env
$lm bpe train data/samples/corpus.en --vocab-size 500 --special-token '<|endoftext|>' -o "$out/tok" --json
head -4 "$out/tok/merges.txt"
# The same corpus as Parquet, one line a row: the same merges.
$lm bpe train data/samples/corpus.parquet --doc-separator $'\n' --vocab-size 500 --special-token '<|endoftext|>' -o "$out/tok-parquet"
cmp "$out/tok/merges.txt" "$out/tok-parquet/merges.txt"
$lm bpe encode --tokenizer gpt2 data/samples/corpus.en -o "$out/corpus.bin" --json
$lm dataload "$out/corpus.bin" -b 12 -t 1024 --model gpt2 --gpu H100 --mfu 0.4 --steps 200
$lm flops gpt2 --seq-len 1024
