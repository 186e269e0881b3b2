#!/usr/bin/env python3
"""Regenerates the expected ids of this directory with pip's tiktoken (the native build of OpenAI's Rust core). Run
once; the outputs are committed. Every special token of each encoding is allowed (allowed_special="all").

usage: PY generate_expected.py        PY: a python with tiktoken, e.g. build/venv/bin/python (scripts/venv.sh)

The rank files come from data/tokenizers/ of this repository (the files OpenAI publishes), so nothing is downloaded.
"""
import json
import os

import tiktoken
from tiktoken.load import load_tiktoken_bpe

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = os.path.join(HERE, "..", "..", "..", "data", "tokenizers")
JOBS = [
    ("corpus.en", ["gpt2"]),
    ("tinystories_sample.txt", ["gpt2", "cl100k_base", "o200k_base"]),
    ("patterns.txt", ["gpt2", "cl100k_base", "o200k_base"]),
]


def encoding(name):
    meta = json.load(open(os.path.join(RANKS, name + ".json")))
    return tiktoken.Encoding(name, pat_str=meta["pat_str"], special_tokens=meta["special_tokens"],
                             mergeable_ranks=load_tiktoken_bpe(os.path.join(RANKS, name + ".tiktoken")))


def main():
    for fname, names in JOBS:
        text = open(os.path.join(HERE, fname), encoding="utf-8", newline="").read()
        for name in names:
            ids = encoding(name).encode(text, allowed_special="all")
            out = os.path.join(HERE, "%s.%s.json" % (fname.rsplit(".", 1)[0], name))
            doc = {"source": fname, "encoding": name, "generator": "tiktoken " + tiktoken.__version__ + " (pip)",
                   "tokens": len(ids), "ids": ids}
            with open(out, "w") as f:
                f.write(json.dumps(doc, separators=(",", ":")) + "\n")
            print(out, len(ids))


if __name__ == "__main__":
    main()
