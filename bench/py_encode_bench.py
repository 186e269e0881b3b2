"""In-process encoding speed, lmkit vs pip's tiktoken, on the same strings in one process.

Usage: py_encode_bench.py CORPUS [--encoding gpt2] [--repeat 3] [--short-count 20000]
Prints one JSON line per case: short strings one encode() call each (call overhead dominates), 1 MB documents
one encode() each, and encode_batch over the documents with 2 threads. Both sides get identical inputs and must
return identical ids (checked). Best of --repeat runs.
"""

import json
import sys
import time

import lmkit
import tiktoken
from tiktoken.load import load_tiktoken_bpe


def flag(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def tiktoken_from_lmkit_data(name):
    import os

    data = os.path.join(os.path.dirname(lmkit.__file__), "share", "lmkit")
    if not os.path.isdir(data):
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    with open(os.path.join(data, "tokenizers", name + ".json")) as f:
        meta = json.load(f)
    ranks = load_tiktoken_bpe(os.path.join(data, "tokenizers", name + ".tiktoken"))
    return tiktoken.Encoding(name=name, pat_str=meta["pat_str"], mergeable_ranks=ranks,
                             special_tokens=meta["special_tokens"])


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    corpus = sys.argv[1]
    name = flag("--encoding", "gpt2")
    repeat = flag("--repeat", 3)
    n_short = flag("--short-count", 20000)
    with open(corpus, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = [l for l in text.split("\n") if l.strip()]
    short = [lines[i % len(lines)][:120] for i in range(n_short)]
    doc_size = 1 << 20
    docs = [text[i:i + doc_size] for i in range(0, min(len(text), 16 * doc_size), doc_size)]
    ours, theirs = lmkit.get_encoding(name), tiktoken_from_lmkit_data(name)
    cases = [
        ("short strings, encode() each", short, lambda e, xs: [e.encode_ordinary(x) for x in xs]),
        ("1 MB documents, encode() each", docs, lambda e, xs: [e.encode_ordinary(x) for x in xs]),
        ("1 MB documents, encode_batch 2 threads", docs, lambda e, xs: e.encode_ordinary_batch(xs, num_threads=2)),
    ]
    for label, inputs, run in cases:
        t_ours, ids_ours = best(lambda: run(ours, inputs), repeat)
        t_theirs, ids_theirs = best(lambda: run(theirs, inputs), repeat)
        if ids_ours != ids_theirs:
            sys.exit(f"{label}: ids differ")
        nbytes = sum(len(x.encode("utf-8")) for x in inputs)
        print(json.dumps({"case": label, "encoding": name, "strings": len(inputs), "bytes": nbytes,
                          "lmkit_s": round(t_ours, 4), "tiktoken_s": round(t_theirs, 4),
                          "lmkit_MBps": round(nbytes / t_ours / 1e6, 2), "tiktoken_MBps": round(nbytes / t_theirs / 1e6, 2),
                          "speedup": round(t_theirs / t_ours, 2), "tiktoken_version": tiktoken.__version__,
                          "lmkit_version": lmkit.__version__}), flush=True)


if __name__ == "__main__":
    main()
