"""Writes the Parquet fixtures of tests/data/corpora (see its PROVENANCE.md) from tests/data/bpe/corpus.en.

usage: python make_corpus_fixtures.py   (needs pyarrow; run from anywhere)
The documents are corpus.en's lines in groups of 20 (the last group shorter), exactly as the CLI tests cut them
(CorpusDocs in tests/cli/bpe_corpus_cli_test.cpp), so a test can compare the Parquet documents with the text.
"""
import os

import pyarrow as pa
import pyarrow.parquet as pq

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))
out = os.path.join(repo, "tests", "data", "corpora")
lines = open(os.path.join(repo, "tests", "data", "bpe", "corpus.en"), "rb").read().decode("utf-8").splitlines(True)
docs = ["".join(lines[i:i + 20]) for i in range(0, len(lines), 20)]

# 11 row groups of 5 documents (the last one 2), a second column before the text, as datasets have.
table = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "text": pa.array(docs, pa.string())})
pq.write_table(table, os.path.join(out, "docs.parquet"), row_group_size=5, compression="zstd",
               use_dictionary=False, write_statistics=False)
# The same documents as large_string (what some writers produce for big columns), in 2 row groups.
large = pa.table({"content": pa.array(docs, pa.large_string())})
pq.write_table(large, os.path.join(out, "docs_large.parquet"), row_group_size=40, compression="zstd",
               use_dictionary=False, write_statistics=False)
# Bad inputs: a "text" column of integers, and a null document in the second row group.
pq.write_table(pa.table({"text": pa.array([1, 2, 3], pa.int64())}), os.path.join(out, "int_text.parquet"))
pq.write_table(pa.table({"text": pa.array(["a b", "c d", None, "e f"], pa.string())}),
               os.path.join(out, "null_text.parquet"), row_group_size=2)
print(len(docs), "documents")
