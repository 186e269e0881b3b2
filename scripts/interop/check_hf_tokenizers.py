"""Check 2: HF tokenizers (Python) loads what `lmkit bpe train` writes and gives lmkit's ids on held-out text:
  - tokenizer.json through Tokenizer.from_file, and
  - vocab.json + merges.txt as a GPT-2 byte-level BPE (models.BPE.from_file + ByteLevel pre-tokenizer and decoder, the
    special token added), which is how GPT-2's own files are loaded.
Tokenizers trained: tests/data/bpe/corpus.en at vocab 1,000, and (when the ../shared/bench corpora are there) the first
20 MB of debmix.txt at vocab 8,000; both with the special tokens SPECIALS (<|endoftext|>, and specials holding a space,
a tab, a newline and non-ASCII text, which a tokenizer.json must store as HF stores them). Held-out text: the encode
fixtures (tests/data/bpe-encode), 2 MB from the end of debmix.txt, and 20,000 strings of check 1's property generator
joined by the specials. lmkit encodes with the trained directory (`--tokenizer DIR`: one folder, one id stream, so no
--special-token is given) and with its tokenizer.json alone; both must equal HF's ids."""
import os
import random
import sys

import numpy as np

from check_tiktoken import EOT, random_string
from common import main, REPO, Check, first_difference, read_u32, run_lmkit, workdir

SPECIALS = [EOT, "[doc break]", "<|tab\there|>", "<sep\n>", "§fin¶"]


def held_out_texts(corpora_dir, work):
    texts = {}
    for f in ("tinystories_sample.txt", "patterns.txt"):
        texts[f] = open(os.path.join(REPO, "tests", "data", "bpe-encode", f), encoding="utf-8", newline="").read()
    deb = os.path.join(corpora_dir, "debmix.txt")
    if os.path.exists(deb):
        with open(deb, "rb") as f:
            f.seek(-2_000_000, os.SEEK_END)
            texts["debmix.txt (last 2 MB)"] = f.read().decode("utf-8", errors="ignore")
    rng = random.Random(32)
    real = texts["tinystories_sample.txt"]
    texts["property strings"] = "".join(random_string(rng, real) + rng.choice(SPECIALS) for _ in range(20000))
    paths = {}
    for k, (name, text) in enumerate(texts.items()):
        paths[name] = os.path.join(work, "held%d.txt" % k)
        with open(paths[name], "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return texts, paths


def hf_from_vocab_merges(d):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    t = Tokenizer(models.BPE.from_file(os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt")))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(SPECIALS)
    return t


def compare(c, label, want, got, text, tok):
    if len(want) == len(got) and np.array_equal(np.asarray(want, dtype=np.uint32), got):
        return True
    i = first_difference(got, want)
    c.fail("%s: ids differ at token %d of %d/%d (HF %s, lmkit %s) near %r" % (
        label, i, len(want), len(got), list(want[i:i + 4]), got[i:i + 4].tolist(),
        tok.decode(list(want[max(0, i - 4):i + 4]))))
    return False


def run():
    import tokenizers
    from tokenizers import Tokenizer
    c = Check("hf_tokenizers")
    c.details["tokenizers"] = tokenizers.__version__
    work = workdir("hf")
    corpora_dir = os.environ.get("LMKIT_CORPORA", "/tmp/lmkit-corpora")
    trainings = [("corpus.en", os.path.join(REPO, "tests", "data", "bpe", "corpus.en"), 1000)]
    deb = os.path.join(corpora_dir, "debmix.txt")
    if os.path.exists(deb):
        part = os.path.join(work, "debmix20M.txt")
        with open(deb, "rb") as f, open(part, "wb") as g:
            g.write(f.read(20_000_000))
        trainings.append(("debmix.txt (first 20 MB)", part, 8000))
    else:
        c.fail("corpora missing under %s (run ../shared/bench/corpora.sh): the 8,000-vocab run needs debmix.txt" %
               corpora_dir)
    texts, paths = held_out_texts(corpora_dir, work)
    c.details["held_out"] = {k: len(v) for k, v in texts.items()}
    c.details["tokenizers_trained"] = []
    for label, src, vocab in trainings:
        d = os.path.join(work, "tok%d" % vocab)
        run_lmkit("--quiet", "bpe", "train", src, "--vocab-size", vocab, *[a for t in SPECIALS for a in
                                                                          ("--special-token", t)], "-o", d)
        c.details["tokenizers_trained"].append({"input": label, "vocab_size": vocab})
        hf = {}
        try:
            hf["tokenizer.json"] = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        except Exception as e:  # noqa: BLE001 - the loader's own message is the finding
            c.fail("%s: HF cannot load tokenizer.json: %s" % (label, e))
        try:
            hf["vocab.json+merges.txt"] = hf_from_vocab_merges(d)
        except Exception as e:  # noqa: BLE001
            c.fail("%s: HF cannot load vocab.json + merges.txt: %s" % (label, e))
        for name, path in paths.items():
            ids = {}
            for how, spec in (("dir", [d]), ("tokenizer.json", [os.path.join(d, "tokenizer.json")])):
                out = os.path.join(work, "ids.u32")
                run_lmkit("bpe", "encode", "--tokenizer", *spec, "--dtype", "uint32", "--format", "bin", path, "-o", out)
                ids[how] = read_u32(out)
            for fmt, tok in hf.items():
                want = tok.encode(texts[name], add_special_tokens=False).ids
                for how, lm in ids.items():
                    pair = "HF from %s vs lmkit -t %s" % (fmt, "DIR" if how == "dir" else "DIR/tokenizer.json")
                    if not compare(c, "vocab %d, %s, %s" % (vocab, pair, name), want, lm, texts[name], tok):
                        c.details.setdefault("differ", {}).setdefault(pair, []).append("vocab %d: %s" % (vocab, name))
    return c


if __name__ == "__main__":
    main("hf_tokenizers", run)
