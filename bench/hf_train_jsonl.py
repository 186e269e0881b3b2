"""HF tokenizers (pip, native Rust) training a GPT-2-style byte-level BPE from a Python iterator over a JSONL corpus,
the way its docs show for datasets (Tokenizer.train_from_iterator with batches of documents). Prints one JSON line.

usage: hf_train_jsonl.py CORPUS.jsonl[.zst|.gz] VOCAB OUTDIR [--field text] [--batch 1000]
.gz is read with Python's gzip module, .zst through `zstd -dc` (Python has no zstd module of its own). Trainer: as
../shared/bench/py/peer_hf_train.py (special <|endoftext|>, the 256 byte symbols, min_frequency 0); each document is
a sequence of its own, so no separator is needed. RAYON_NUM_THREADS caps HF's threads.
"""
import gzip
import json
import os
import subprocess
import sys
import time

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
import tokenizers

path, vocab, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
field = sys.argv[sys.argv.index("--field") + 1] if "--field" in sys.argv else "text"
batch = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 1000


def lines():
    if path.endswith(".zst"):
        p = subprocess.Popen(["zstd", "-dcq", path], stdout=subprocess.PIPE)
        yield from p.stdout
        if p.wait() != 0:
            sys.exit("zstd -dc failed")
    elif path.endswith(".gz"):
        yield from gzip.open(path, "rb")
    else:
        yield from open(path, "rb")


docs = 0
text_bytes = 0


def batches():
    global docs, text_bytes
    buf = []
    for line in lines():
        if not line.strip():
            continue
        t = json.loads(line)[field]
        docs += 1
        text_bytes += len(t.encode("utf-8"))
        buf.append(t)
        if len(buf) == batch:
            yield buf
            buf = []
    if buf:
        yield buf


os.makedirs(outdir, exist_ok=True)
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"], min_frequency=0, show_progress=False,
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
t0 = time.perf_counter()
tok.train_from_iterator(batches(), tr)
t1 = time.perf_counter()
tok.save(os.path.join(outdir, "tokenizer.json"))
print(json.dumps({"peer": "hf-tokenizers-python-iterator", "version": tokenizers.__version__, "input": path,
                  "documents": docs, "text_bytes": text_bytes, "requested_vocab": vocab,
                  "train_s": round(t1 - t0, 3), "final_vocab": tok.get_vocab_size(),
                  "rayon_threads_env": os.environ.get("RAYON_NUM_THREADS")}))
