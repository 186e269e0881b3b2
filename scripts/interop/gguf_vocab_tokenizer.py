#!/usr/bin/env python3
"""A Hugging Face tokenizer.json from one of llama.cpp's vocabulary-only GGUF files (`models/ggml-vocab-NAME.gguf`).

llama.cpp's convert_hf_to_gguf_update.py writes those files from a family's real tokenizer.json (its tokens in GPT-2's
byte form, its merges, its token types) and, beside them, `.inp` test strings with `.out` ids that HF's tokenizer of
that model gave. Where no real tokenizer.json of a family can be had (Falcon), this rebuilds one: the GGUF's tokens
and merges with the family's pre-tokenizer pipeline, which the GGUF names only by a type (`tokenizer.ggml.pre`) and
which is written here as the model's own tokenizer.json has it (FAMILY_PIPELINES). `--check INP OUT` then requires HF
tokenizers on the rebuilt file to give llama.cpp's recorded ids on every test string, which ties the rebuilt file to
the real one.

The reader also takes a GGUF whose bytes that are not UTF-8 were each replaced by U+FFFD (a copy stored as text, as
the only indexed copy of llama.cpp's vocabulary files is): the strings are UTF-8 and survive; a length prefix of 128
bytes or more, or an array count, is then found from the data around it.

`--cut` writes the small CI fixture: the special and byte tokens plus exactly the merges (and their tokens, ids
unchanged) that encoding the given strings applies in the whole file, which gives the same ids as the whole file on
those strings (BPE applies the lowest-ranked applicable merge; every merge it applies is kept, so the one it picks is
always there and nothing lower-ranked was added).

    python scripts/interop/gguf_vocab_tokenizer.py FILE.gguf OUT.json [--check INP OUT] [--cut CUT.json TEXTS.json]
"""
import argparse
import json
import struct
import sys

FFFD = b"\xef\xbf\xbd"

# The pre-tokenizer, decoder and model flags of each family's tokenizer.json (tokenizer.ggml.pre -> pipeline).
FAMILY_PIPELINES = {
    "falcon": {
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            {"type": "Digits", "individual_digits": False},
            {"type": "Split", "pattern": {"Regex": "[0-9][0-9][0-9]"}, "behavior": "Isolated", "invert": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    },
}


class Reader:
    def __init__(self, data):
        self.b, self.o = data, 0

    def u32(self):
        v = struct.unpack_from("<I", self.b, self.o)[0]
        self.o += 4
        return v

    def u64(self):
        """A length or count: 8 bytes, or (mangled) U+FFFD for each byte >= 0x80 among them."""
        raw = self.b[self.o:self.o + 8]
        if FFFD not in self.b[self.o:self.o + 24]:
            self.o += 8
            return struct.unpack("<Q", raw)[0]
        out, k, n = bytearray(), self.o, 0
        while n < 8:
            if self.b[k:k + 3] == FFFD:
                out.append(0xFF)  # unknown high byte
                k += 3
            else:
                out.append(self.b[k])
                k += 1
            n += 1
        self.o = k
        return None if 0xFF in out else struct.unpack("<Q", bytes(out))[0]

    def string(self, end):
        n = self.u64()
        if n is None:  # a mangled length: the string runs to the next sane length prefix (or to `end`)
            k = self.o
            while k < end and not (0 < self.b[k] < 0x80 and self.b[k + 1:k + 8] == b"\0" * 7):
                k += 1
            n = k - self.o
        s = self.b[self.o:self.o + n].decode("utf-8")
        self.o += n
        return s


def read_gguf(path):
    """{key: value} of a vocabulary GGUF (no tensors are read)."""
    b = open(path, "rb").read()
    if b[:4] != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    r = Reader(b)
    r.o = 4
    r.u32()  # version
    r.u64()  # tensors
    nkv = r.u64()
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    kv = {}
    for i in range(nkv):
        key = r.string(len(b))
        t = r.u32()
        if t == 8:
            kv[key] = r.string(len(b))
        elif t == 9:
            et = r.u32()
            count = r.u64()
            # Arrays of strings end where the next key starts ("tokenizer.ggml." or the end of the header).
            nxt = b.find(b"tokenizer.ggml.", r.o)
            end = nxt - 8 if nxt >= 0 else len(b)
            if et == 8:
                vals = []
                while r.o < end and (count is None or len(vals) < count):
                    vals.append(r.string(end))
            else:
                size = struct.calcsize(scalar[et])
                if count is None:
                    count = (end - r.o) // size  # mangled numbers: only their count is used
                vals = [None] * count
                r.o += size * count
            kv[key] = vals
        else:
            raw = b[r.o:r.o + 16]
            size = struct.calcsize(scalar[t])
            if FFFD in raw[:size + 2]:  # a mangled number: skip it (not needed here)
                k, n = r.o, 0
                while n < size:
                    k += 3 if b[k:k + 3] == FFFD else 1
                    n += 1
                r.o = k
                kv[key] = None
            else:
                kv[key] = struct.unpack_from(scalar[t], b, r.o)[0]
                r.o += size
    return kv


def build(kv, specials_count):
    pre = kv.get("tokenizer.ggml.pre")
    if pre not in FAMILY_PIPELINES:
        sys.exit("tokenizer.ggml.pre %r: no pipeline written here" % pre)
    tokens, merges = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.merges"]
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True} for i, t in enumerate(tokens[:specials_count])]}
    tj.update(FAMILY_PIPELINES[pre])
    tj["model"] = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                   "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                   "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges}
    return tj


def split_tests(inp, out):
    strings = open(inp, encoding="utf-8").read().split("\n__ggml_vocab_test__\n")[:-1]
    ids = [[int(x) for x in line.split()] for line in open(out, encoding="utf-8").read().split("\n")]
    return strings, ids[:len(strings)]


def cut(tj, texts):
    """tj with only the merges that encoding `texts` applies (see the docstring), ids unchanged."""
    from tokenizers import Tokenizer
    hf = Tokenizer.from_str(json.dumps(tj))
    vocab = tj["model"]["vocab"]
    rank = {tuple(m.split(" ", 1)): i for i, m in enumerate(tj["model"]["merges"])}
    used = set()
    for text in texts:
        for word, _ in hf.pre_tokenizer.pre_tokenize_str(text):
            syms = list(word)
            while len(syms) > 1:
                best = min(range(len(syms) - 1), key=lambda k: rank.get((syms[k], syms[k + 1]), 1 << 60))
                pair = (syms[best], syms[best + 1])
                if pair not in rank:
                    break
                used.add(rank[pair])
                # HF merges every occurrence of the best pair, left to right, before the next rank
                out, k = [], 0
                while k < len(syms):
                    if k + 1 < len(syms) and (syms[k], syms[k + 1]) == pair:
                        out.append(pair[0] + pair[1])
                        k += 2
                    else:
                        out.append(syms[k])
                        k += 1
                syms = out
    merges = [tj["model"]["merges"][i] for i in sorted(used)]
    keep = {t for t, i in vocab.items() if i < len(tj["added_tokens"]) or len(t) == 1}
    for m in merges:
        a, b = m.split(" ", 1)
        keep.update((a, b, a + b))
    small = json.loads(json.dumps(tj))
    small["model"]["vocab"] = {t: i for t, i in vocab.items() if t in keep}
    small["model"]["merges"] = merges
    return small


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--specials", type=int, required=True, help="how many leading tokens are special (Falcon: 12)")
    ap.add_argument("--check", nargs=2, metavar=("INP", "OUT"))
    ap.add_argument("--cut", nargs=2, metavar=("CUT_JSON", "TEXTS_JSON"))
    a = ap.parse_args()
    kv = read_gguf(a.gguf)
    tj = build(kv, a.specials)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    print("%s: %d tokens, %d merges, pre %s" % (a.out, len(tj["model"]["vocab"]), len(tj["model"]["merges"]),
                                                kv.get("tokenizer.ggml.pre")), file=sys.stderr)
    if a.check:
        from tokenizers import Tokenizer
        hf = Tokenizer.from_file(a.out)
        strings, ids = split_tests(*a.check)
        bad = [i for i, s in enumerate(strings) if hf.encode(s, add_special_tokens=False).ids != ids[i]]
        print("llama.cpp's recorded HF ids: %d/%d strings identical" % (len(strings) - len(bad), len(strings)),
              file=sys.stderr)
        if bad:
            sys.exit(1)
    if a.cut:
        texts = json.load(open(a.cut[1], encoding="utf-8"))
        small = cut(tj, texts)
        from tokenizers import Tokenizer
        whole, part = Tokenizer.from_file(a.out), Tokenizer.from_str(json.dumps(small))
        for t in texts:
            assert whole.encode(t, add_special_tokens=False).ids == part.encode(t, add_special_tokens=False).ids, t
        with open(a.cut[0], "w", encoding="utf-8") as f:
            json.dump(small, f, ensure_ascii=False, separators=(",", ":"))
        print("%s: %d tokens, %d merges; same ids as the whole file on %d strings" % (
            a.cut[0], len(small["model"]["vocab"]), len(small["model"]["merges"]), len(texts)), file=sys.stderr)


if __name__ == "__main__":
    main()
