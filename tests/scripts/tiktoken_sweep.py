#!/usr/bin/env python3
"""The code-point sweep: every code point in a few contexts, encoded by pip's tiktoken (pinned in
tests/requirements.txt) from the rank files shipped in data/tokenizers/ (no network), summarised per block of 4,096
code points as a 64-bit FNV-1a digest of the ids. Writes tests/data/bpe-encode/codepoint_sweep.json, which
tests/unit/bpe/pretokenize/codepoint_sweep_test.cpp holds lmkit's ids to; `--check` compares instead of writing.

The text of block b: for each code point cp in [b * 4096, (b + 1) * 4096), surrogates skipped, with c = chr(cp):
    "a" c "b A" c "a " c "'s 1" c "2" c "\\n"
(c between letters, after a capital and before a lowercase letter, after a space and before a contraction, between
digits, and before a newline), encoded with encode_ordinary. The digest: FNV-1a 64 over the ids as little-endian
uint32 bytes.
"""
import argparse
import json
import sys
from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE = ROOT / "tests/data/bpe-encode/codepoint_sweep.json"
BLOCK = 4096
ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")


def encoding(name):
    meta = json.loads((ROOT / f"data/tokenizers/{name}.json").read_text())
    ranks = load_tiktoken_bpe(str(ROOT / f"data/tokenizers/{name}.tiktoken"))  # a local path: read, not fetched
    return tiktoken.Encoding(name=name, pat_str=meta["pat_str"], mergeable_ranks=ranks,
                             special_tokens=meta["special_tokens"])


def block_text(b):
    parts = []
    for cp in range(b * BLOCK, (b + 1) * BLOCK):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        parts.append(f"a{c}b A{c}a {c}'s 1{c}2{c}\n")
    return "".join(parts)


def fnv1a64(ids):
    h = 0xCBF29CE484222325
    for i in ids:
        for byte in i.to_bytes(4, "little"):
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed fixture instead of writing it")
    args = ap.parse_args()
    doc = {"tiktoken": tiktoken.__version__, "block": BLOCK,
           "template": "a{c}b A{c}a {c}'s 1{c}2{c}\\n per code point, surrogates skipped",
           "digest": "FNV-1a 64 of the ids as little-endian uint32", "encodings": {}}
    for name in ENCODINGS:
        enc = encoding(name)
        digests, tokens = [], []
        for b in range(0x110000 // BLOCK):
            ids = enc.encode_ordinary(block_text(b))
            digests.append(f"{fnv1a64(ids):016x}")
            tokens.append(len(ids))
        doc["encodings"][name] = {"tokens": tokens, "digests": digests}
        print(f"{name}: {sum(tokens)} tokens", file=sys.stderr)
    text = json.dumps(doc, indent=1) + "\n"
    if args.check:
        old = json.loads(FIXTURE.read_text())
        bad = [(n, b) for n in ENCODINGS for b, (x, y) in
               enumerate(zip(old["encodings"][n]["digests"], doc["encodings"][n]["digests"])) if x != y]
        print(f"{FIXTURE}: " + ("matches tiktoken" if not bad else f"{len(bad)} blocks differ, first {bad[:5]}"))
        sys.exit(1 if bad else 0)
    FIXTURE.write_text(text)
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    main()
