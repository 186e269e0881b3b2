#!/usr/bin/env python3
"""Writes the pre-tokenizer class (0..8, as src/lmkit/bpe/pretokenize/unicode_classes.h numbers them) of every code point
0..0x10FFFF, one byte each, to the file named by argv[1], as PyPI's `regex` module (pinned in tests/requirements.txt,
Unicode 16.0) classifies them: \\p{Lu} \\p{Ll} \\p{Lt} \\p{Lm} \\p{Lo}, \\p{M}, \\p{N}, \\p{White_Space}, else 0.

An oracle independent of scripts/unicode_classes.py (which reads unicodedata2's general categories): another
package, another reading of the Unicode data, and White_Space as the property itself. Surrogates are class 0.
Exit 2 when the installed regex is not at Unicode 16.0 (checked on U+A7CB, new in 16.0, and U+A7CE, new in 17.0).
"""
import sys

import regex

if not (regex.match(r"\p{Lu}", "\ua7cb") and not regex.match(r"\p{Cn}", "\ua7cb") and regex.match(r"\p{Cn}", "\ua7ce")):
    sys.exit("unicode_classes_oracle.py: the installed regex module is not at Unicode 16.0")
text = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
offset = lambda i: i if i < 0xD800 else i + 0x800  # index in `text` -> code point
out = bytearray(0x110000)
for cls, prop in ((1, r"\p{Lu}"), (2, r"\p{Ll}"), (3, r"\p{Lt}"), (4, r"\p{Lm}"), (5, r"\p{Lo}"), (6, r"\p{M}"),
                  (7, r"\p{N}"), (8, r"\p{White_Space}")):
    for m in regex.finditer(prop + "+", text):
        for i in range(m.start(), m.end()):
            cp = offset(i)
            if out[cp]:
                sys.exit(f"U+{cp:04X} is in two classes")
            out[cp] = cls
with open(sys.argv[1], "wb") as f:
    f.write(out)
