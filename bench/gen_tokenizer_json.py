#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json of N tokens (the 256 bytes, then random concatenations of earlier tokens,
each with its merge) and the same ranks as a tiktoken file (rank = id), for bench/bpe_load.sh.
usage: gen_tokenizer_json.py N OUT.json OUT.tiktoken"""
import base64
import json
import random
import sys

bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
B2U = {b: chr(c) for b, c in zip(bs, cs)}


def printable(t):
    return "".join(B2U[x] for x in t)


def main():
    size, out_json, out_tik = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    rnd = random.Random(1)
    toks = [bytes([b]) for b in range(256)]
    seen = set(toks)
    merges = []
    while len(toks) < size:
        a = toks[rnd.randrange(len(toks))] if rnd.random() < 0.5 else toks[rnd.randrange(max(1, len(toks) - 2000), len(toks))]
        b = toks[rnd.randrange(256)] if rnd.random() < 0.5 else toks[rnd.randrange(len(toks))]
        t = a + b
        if t in seen or len(t) > 24:
            continue
        seen.add(t)
        toks.append(t)
        merges.append(printable(a) + " " + printable(b))
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    j = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": bl, "post_processor": None,
         "decoder": bl, "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                                  "ignore_merges": False, "vocab": {printable(t): i for i, t in enumerate(toks)},
                                  "merges": merges}}
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)
    with open(out_tik, "w") as f:
        for i, t in enumerate(toks):
            f.write("%s %d\n" % (base64.b64encode(t).decode(), i))


if __name__ == "__main__":
    main()
