#!/usr/bin/env python3
"""Writes tests/data/bpe/native/goldens_extra.json from the fixtures scripts/native_goldens.py made (it does not
change them): for --add-special-tokens, sentencepiece's `encode(s, add_bos=True)` of each `.model` and mistral-common's
`Tekkenizer.encode(s, bos=True, eos=False)` of each tekken.json on the first strings of native/goldens.json; and
sentencepiece's `decode` of 400 random id sequences per `.model` (pieces that start with U+2581, U+2581 runs,
control, unknown and user-defined pieces, ASCII byte pieces: sequences whose bytes are valid UTF-8, since lmkit writes
byte pieces as bytes where sentencepiece replaces ill-formed UTF-8 with U+FFFD).
    python scripts/native_goldens_extra.py   (with sentencepiece 0.2.3 and mistral-common 1.13.1 importable)
"""
import json
import os
import random
import sys

sys.path.append(os.environ.get("LMKIT_PYLIB", "/root/.cache/lmkit-tokenizers/pylib"))
import sentencepiece as spm  # noqa: E402
from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NATIVE = os.path.join(ROOT, "tests", "data", "bpe", "native")
W = "\u2581"


def main():
    with open(os.path.join(NATIVE, "goldens.json"), encoding="utf-8") as f:
        strings = json.load(f)["strings"][:12]
    out = {"sentencepiece_version": spm.__version__, "strings": strings, "files": {}}
    rng = random.Random(41)
    for name in sorted(os.listdir(NATIVE)):
        path = os.path.join(NATIVE, name)
        if name.endswith(".model"):
            sp = spm.SentencePieceProcessor(model_file=path)
            n = sp.get_piece_size()
            ws = [i for i in range(n) if sp.id_to_piece(i).startswith(W) and not sp.is_control(i)]
            special = [i for i in range(n) if sp.is_control(i) or sp.is_unknown(i)]
            user = [i for i in range(n) if not sp.is_control(i) and not sp.is_unknown(i) and not sp.is_byte(i)]
            ascii_bytes = [i for i in range(n) if sp.is_byte(i) and int(sp.id_to_piece(i)[3:5], 16) < 0x80]
            pool = ws[:60] + [sp.piece_to_id(W)] * 10 + special * 3 + user[:200] + ascii_bytes[:40]
            seqs = [[rng.choice(pool) for _ in range(rng.randint(1, 6))] for _ in range(400)]
            out["files"][name] = {"ids_with_bos": [sp.encode(s, add_bos=True) for s in strings],
                                  "decode_ids": seqs, "decoded": [sp.decode(s) for s in seqs]}
        elif name.startswith("tekken") and name.endswith(".json"):
            enc = Tekkenizer.from_file(path)
            out["files"][name] = {"ids_with_bos": [enc.encode(s, bos=True, eos=False) for s in strings]}
    with open(os.path.join(NATIVE, "goldens_extra.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print({k: list(v) for k, v in out["files"].items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
