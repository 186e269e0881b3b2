#!/usr/bin/env python3
"""hf_encode.py TOKENIZER_JSON TEXTS_JSON: prints, as one JSON list, the ids Hugging Face tokenizers (pip's
`tokenizers`, pinned in tests/requirements.txt) gives each text of TEXTS_JSON (a JSON list of strings) with
Tokenizer.from_file(TOKENIZER_JSON).encode(text, add_special_tokens=False). An independent check that a tokenizer.json
lmkit writes means to Hugging Face what it means to lmkit."""
import json
import sys

from tokenizers import Tokenizer

tok = Tokenizer.from_file(sys.argv[1])
texts = json.load(open(sys.argv[2], encoding="utf-8"))
print(json.dumps([tok.encode(t, add_special_tokens=False).ids for t in texts]))
