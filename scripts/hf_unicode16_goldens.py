#!/usr/bin/env python3
"""Writes tests/data/bpe/hf/unicode16_*.json and unicode16.goldens.json: HF tokenizers' ids for strings holding code
points assigned in Unicode 15.0-16.0, under the regexes of real families (Qwen2, DeepSeek V3's three splits, Mistral's
Tekken; GPT-NeoX's ByteLevel and Llama 3's cl100k regex, which lmkit runs on its own scanner). HF's Oniguruma classes
them by Unicode 16.0; Debian 12's PCRE2 10.42 by 14.0, where they are unassigned. The tokenizers reuse the model of
qwen2_nfc_split.json (scripts/hf_pipeline_goldens.py) with each family's normalizer and pre-tokenizer (the regexes as
the families' tokenizer.json files spell them). Not run by CI (heavy venv:
`$(bash scripts/heavy-venv.sh) scripts/hf_unicode16_goldens.py`); tests/unit/bpe/pretokenize/unicode_categories_test.cpp
compares lmkit with the committed goldens.
"""
import json
import os

import tokenizers
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "bpe", "hf")

# Code points new in Unicode 15.0-16.0 (unassigned in 14.0), one or more per general category they were added to.
NEW = {"Lu": [0x1C89, 0x10D58], "Ll": [0x1C8A, 0x10D7C], "Lm": [0x10D4E, 0x1E4EB], "Lo": [0x105C0, 0x2EBF0, 0x31350],
       "Mc": [0xCF3, 0x1612C], "Mn": [0x897, 0x1E5EF], "Nd": [0x10D40, 0x16130, 0x1E5FA], "No": [0x1D2C0],
       "Pd": [0x10D6E], "Po": [0x1B4E, 0x1E5FF], "Sm": [0x10D8E], "So": [0x2427, 0x1FBEF], "Cf": [0x13439]}

QWEN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|"
        r"\s+")
TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
          r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
DEEPSEEK_V3 = [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
               "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?"
               "[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"]
BYTELEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


def split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


PIPELINES = {
    "unicode16_tekken": (None, {"type": "Sequence", "pretokenizers": [split(TEKKEN), BYTELEVEL]}),
    "unicode16_deepseek_v3": ({"type": "Sequence", "normalizers": []},
                              {"type": "Sequence", "pretokenizers": [split(r) for r in DEEPSEEK_V3] + [BYTELEVEL]}),
}
# Committed tokenizers of scripts/hf_pipeline_goldens.py with the other families' pipelines.
EXISTING = ["qwen2_nfc_split", "neox_nfc_bytelevel", "llama3_known_regex"]


def cases():
    out = []
    for cat, cps in NEW.items():
        for cp in cps:
            c = chr(cp)
            out += ["x%sy %s%s" % (c, c, c), " %s1%s2 a%s!" % (c, c, c), "Hello%s world\n%s\t%s 12%s345" % (c, c, c, c),
                    "%s's %s%s. (%s)" % (c, c, c.upper(), c)]
    every = "".join(chr(cp) for cps in NEW.values() for cp in cps)
    out += [every, " ".join(every), "a" + "b".join(every) + "9"]
    return out


def main():
    with open(os.path.join(OUT, "qwen2_nfc_split.json"), encoding="utf-8") as f:
        base = json.load(f)
    for name, (normalizer, pre) in PIPELINES.items():
        j = dict(base, normalizer=normalizer, pre_tokenizer=pre)
        path = os.path.join(OUT, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        Tokenizer.from_file(path).save(path)  # HF's own spelling of the file
    texts = cases()
    goldens = {"tokenizers_version": tokenizers.__version__, "cases": texts, "tokenizers": {}}
    for name in list(PIPELINES) + EXISTING:
        tok = Tokenizer.from_file(os.path.join(OUT, name + ".json"))
        goldens["tokenizers"][name] = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    with open(os.path.join(OUT, "unicode16.goldens.json"), "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
