// Corpora for the tests of the corpus readers (tests/unit/io, tests/cli/bpe_corpus_cli_test.cpp): the documents of
// tests/data/bpe/corpus.en, as text joined by a separator, as JSONL and compressed with zlib and zstd, so that each
// form can be compared with the others. tests/data/corpora/docs.parquet holds the same documents
// (tests/scripts/make_corpus_fixtures.py).
#pragma once

#include <string>
#include <vector>

namespace lmkit::test {

// corpus.en's lines in groups of 20 (51 documents; the last one shorter).
std::vector<std::string> CorpusEnDocs();
// The documents joined by `separator`.
std::string Join(const std::vector<std::string>& docs, const std::string& separator);
// One line {"id": i, "text": doc} per document (JSON-escaped, non-ASCII as \u escapes), each ending in '\n'.
std::string Jsonl(const std::vector<std::string>& docs, const std::string& key = "text");
// A gzip stream (zlib, one member) and a zstd frame with a content checksum (as the zstd tool writes) of `bytes`.
std::string Gzip(const std::string& bytes);
std::string Zstd(const std::string& bytes);

// Writes dir/joined.txt (the documents joined by <|endoftext|>) and the same documents as dir/c.jsonl, c.jsonl.gz and
// c.jsonl.zst; returns those three paths, and tests/data/corpora/docs.parquet when this build reads Parquet.
std::vector<std::string> WriteCorpusForms(const std::string& dir);

}  // namespace lmkit::test
