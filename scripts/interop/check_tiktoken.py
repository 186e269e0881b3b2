"""Check 1: `lmkit bpe encode` gives pip's native tiktoken's ids for gpt2, cl100k_base and o200k_base
  - on every corpus of ../shared/bench (built by its corpora.sh; LMKIT_CORPORA names the directory), and
  - on a seeded property loop of random and adversarial strings (LMKIT_INTEROP_STRINGS, default 100,000).
tiktoken runs with every special token allowed (lmkit's default for these encodings). A corpus is cut right after each
<|endoftext|> (tiktoken encodes the text between special tokens independently, so the cut cannot change an id) and the
pieces go through encode_batch on all cores; the ids are compared with lmkit's uint32 output piece by piece."""
import os
import random
import sys
import time
import unicodedata

import numpy as np

from common import main, Check, first_difference, read_u32, run_lmkit, tiktoken_encoding, workdir

ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")
EOT = "<|endoftext|>"
CORPORA = ("kdocs.txt", "pydocs.txt", "gcide.txt", "wn.txt", "sotu_moby.txt", "debmix.txt")


def pieces_after_eot(text, target=1 << 20):
    """Cuts text right after an <|endoftext|>, about every `target` characters."""
    out, start = [], 0
    while start < len(text):
        p = text.find(EOT, start + target)
        end = len(text) if p < 0 else p + len(EOT)
        out.append(text[start:end])
        start = end
    return out


def lmkit_ids(enc_name, path, work):
    out = os.path.join(work, "ids.u32")
    run_lmkit("--threads", os.cpu_count() or 2, "bpe", "encode", "--tokenizer", enc_name, "--dtype", "uint32",
              "--format", "bin", path, "-o", out)
    ids = read_u32(out)
    os.unlink(out)
    return ids


def check_corpus(c, enc, enc_name, path, work):
    ids = lmkit_ids(enc_name, path, work)
    text = open(path, "rb").read().decode("utf-8")
    off = 0
    threads = os.cpu_count() or 2
    parts = pieces_after_eot(text)
    for k in range(0, len(parts), 8 * threads):
        batch = parts[k:k + 8 * threads]
        for piece, want in zip(batch, enc.encode_batch(batch, num_threads=threads, allowed_special="all")):
            got = ids[off:off + len(want)]
            if len(got) != len(want) or not np.array_equal(got, np.asarray(want, dtype=np.uint32)):
                i = first_difference(got, want)
                c.fail("%s %s: ids differ at token %d (tiktoken %s, lmkit %s) near %r" % (
                    enc_name, os.path.basename(path), off + i, want[i:i + 4], got[i:i + 4].tolist(),
                    enc.decode(want[max(0, i - 4):i + 4])))
                return 0
            off += len(want)
    if off != len(ids):
        c.fail("%s %s: lmkit wrote %d ids, tiktoken %d" % (enc_name, os.path.basename(path), len(ids), off))
    return off


# Letters, digits and marks assigned in Unicode 15.0-16.0 (CJK Ext H and I, Kawi, Nag Mundari, Garay, Kirat Rai, Tulu-
# Tigalari, Latin additions, outlined digits, ...): tiktoken's regex engine classifies them by Unicode 16.
NEW_IN_UNICODE_15_16 = ("\U00031350\u0cf3\ua7cb\U00011f04\U0001e4d0\U00010d40\U0001ccf0\U0002ebf0\U0001e030"
                        "\U00016d43\U00016100\U00011bc0\U000105c0\U0001e5d0\U0001e5f1\U00013460\U00011380\U0001df25")
# Adversarial material: the pre-tokenizers' edge cases (contractions in every case, digit runs, every kind of Unicode
# whitespace, letters/numbers/marks of many scripts, emoji sequences, CR/LF mixes, special-token fragments).
FRAGMENTS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "’s", "'", "''",
             " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\u00a0", "\u3000", "\u2028", "\x85",
             EOT, "<|endoftext", "<|", "|>", "endoftext", "<|fim_prefix|>", "<|endofprompt|>", "<|im_start|>",
             "123", "1234567", "٣٤٥", "½", "²", "Ⅻ", "3.14", "1,000", "https://example.com/a?b=c", "e.g.", "U.S.A.",
             "don't", "I'M", "you'RE", "🙂", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "\u200d", "\ufe0f", "é", "é", "ǅ", "ß",
             "İ", "ı", "ʰ", "\U00031350's", "\u0cf3's", "\ua7cb'll", "中文", "日本語", "한국어", "ひらがな", "Ελληνικά", "русский", "עברית", "العربية",
             "हिन्दी", "ไทย", "\x00", "\x1b[0m", "\x7f", "\ufffd", "\U0001d400", "\U00010000", "\uffff"]
CLASSES = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n\r\x0b\x0c",
           "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "\u00a0\u1680\u2000\u2009\u200a\u202f\u205f\u3000\u2028\u2029\x85",
           "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿœšž", "\u0300\u0301\u0308\u0327\u0903\u093e\u20dd", "абвгдежзийклмнопрст",
           "αβγδεζηθικλμνξοπρστ", "中文字符汉语日本語ひらがなカタカナ한국어", "٠١٢٣٤٥٦٧٨٩०१२३", "ⅠⅡⅢⅣ①②③¹²³½¾",
           "ʰʲˠ々〻ǅǈǋ", "😀😃🙂👍🏽👨‍👩‍👧‍👦❤️🇺🇸", "“”‘’…—–·•€£¥©®™", NEW_IN_UNICODE_15_16]


def random_codepoint(rng):
    while True:
        r = rng.random()
        cp = rng.randrange(0x80) if r < 0.3 else rng.randrange(0x800) if r < 0.5 else \
            rng.randrange(0x10000) if r < 0.9 else rng.randrange(0x110000)
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_string(rng, real):
    mode = rng.random()
    n = int(rng.expovariate(1 / 12)) + (rng.random() < 0.02) * rng.randrange(200, 3000)
    if mode < 0.35:  # fragments and character classes
        out = []
        for _ in range(n):
            if rng.random() < 0.4:
                out.append(rng.choice(FRAGMENTS))
            else:
                cls = rng.choice(CLASSES)
                out.append("".join(rng.choice(cls) for _ in range(int(rng.expovariate(1 / 4)) + 1)))
        return "".join(out)
    if mode < 0.6:  # any code point (surrogates aside)
        return "".join(random_codepoint(rng) for _ in range(n))
    if mode < 0.7:  # long runs of one class (long pre-tokens, long whitespace runs)
        return rng.choice(CLASSES)[0] * (n + 1) + rng.choice(FRAGMENTS)
    # real text, mutated
    start = rng.randrange(max(1, len(real) - 400))
    s = list(real[start:start + int(rng.expovariate(1 / 80)) + 1])
    for _ in range(rng.randrange(4)):
        if s:
            p = rng.randrange(len(s) + 1)
            what = rng.random()
            if what < 0.4:
                s.insert(p, rng.choice(FRAGMENTS))
            elif what < 0.7 and p < len(s):
                del s[p]
            else:
                s.insert(p, random_codepoint(rng))
    return "".join(s)


def check_property(c, encs, count, seed, real, work):
    rng = random.Random(seed)
    strings = [random_string(rng, real) for _ in range(count)]
    text = EOT.join(strings)
    path = os.path.join(work, "property.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    c.details["property"] = {"strings": count, "seed": seed, "characters": len(text),
                             "bytes": os.path.getsize(path)}
    threads = os.cpu_count() or 2
    for name, enc in encs.items():
        got = lmkit_ids(name, path, work)
        want = enc.encode(text, allowed_special="all")
        if len(got) == len(want) and np.array_equal(got, np.asarray(want, dtype=np.uint32)):
            continue
        # Which strings differ: both streams cut at the separator's id (a string's own <|endoftext|> cuts it too, in
        # both), then the pieces mapped back to the strings.
        eot = enc.encode_single_token(EOT)
        cut = lambda a: np.split(np.asarray(a, dtype=np.uint32), np.nonzero(np.asarray(a) == eot)[0] + 1)
        pw, pg = cut(want), cut(got)
        if len(pw) != len(pg):
            c.fail("%s property: lmkit's ids hold %d <|endoftext|>, tiktoken's %d (first difference at token %d)" % (
                name, len(pg) - 1, len(pw) - 1, first_difference(got, want)))
            continue
        owner = []
        for k, ids in enumerate(enc.encode_batch(strings, num_threads=threads, allowed_special="all")):
            owner += [k] * (sum(1 for t in ids if t == eot) + 1)
        bad = sorted({owner[p] for p in range(len(pw)) if not np.array_equal(pw[p], pg[p])})
        # Code points unassigned in this Python's Unicode data (14.0 in Python 3.11) hold every letter/number added
        # since; the count tells a Unicode-version difference from any other.
        new_cp = sum(any(unicodedata.category(ch) == "Cn" for ch in strings[k]) for k in bad)
        c.details.setdefault("property_mismatches", {})[name] = {
            "strings": len(bad), "with_code_points_unassigned_in_unicode_" + unicodedata.unidata_version: new_cp}
        for k in bad[:3]:
            mine = lmkit_ids_of(pg, owner, k)
            theirs = lmkit_ids_of(pw, owner, k)
            i = first_difference(mine, theirs)
            c.fail("%s property: string %d differs at its token %d, near %r: tiktoken %s, lmkit %s" % (
                name, k, i, enc.decode_bytes(theirs[max(0, i - 6):i + 3]).decode("utf-8", "backslashreplace"),
                theirs[max(0, i - 2):i + 4],
                mine[max(0, i - 2):i + 4]))


def lmkit_ids_of(pieces, owner, k):
    return [int(t) for p, o in zip(pieces, owner) if o == k for t in p]


def run():
    c = Check("tiktoken")
    import tiktoken
    c.details["tiktoken"] = tiktoken.__version__
    work = workdir("tiktoken")
    encs = {n: tiktoken_encoding(n) for n in ENCODINGS}
    corpora_dir = os.environ.get("LMKIT_CORPORA", "/tmp/lmkit-corpora")
    found = [p for p in (os.path.join(corpora_dir, f) for f in CORPORA) if os.path.exists(p)]
    c.details["corpora_dir"] = corpora_dir
    if len(found) != len(CORPORA):
        c.fail("corpora missing under %s (run ../shared/bench/corpora.sh): %s" % (
            corpora_dir, [f for f in CORPORA if not os.path.exists(os.path.join(corpora_dir, f))]))
    tokens = {}
    t0 = time.time()
    for path in found:
        for name, enc in encs.items():
            tokens["%s/%s" % (os.path.basename(path), name)] = check_corpus(c, enc, name, path, work)
    c.details["corpus_tokens"] = tokens
    c.details["corpora_seconds"] = round(time.time() - t0, 1)
    real = open(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "bpe-encode",
                             "tinystories_sample.txt"), encoding="utf-8").read()
    t0 = time.time()
    check_property(c, encs, int(os.environ.get("LMKIT_INTEROP_STRINGS", "100000")),
                   int(os.environ.get("LMKIT_INTEROP_SEED", "24")), real, work)
    c.details["property"]["seconds"] = round(time.time() - t0, 1)
    return c


if __name__ == "__main__":
    main("tiktoken", run)
