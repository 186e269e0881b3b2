// Corpus: JSONL (plain, gzip, zstd) and Parquet read as the text that joins their documents; ranges between cuts
// concatenate to the whole; option errors name their fields.
#include "lmkit/io/corpus.h"

#include <catch2/catch.hpp>

#include "lmkit/io/parquet_reader.h"
#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::io::Corpus;
using lmkit::io::CorpusFormat;
using lmkit::io::CorpusOptions;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

namespace {

const std::string kSep = "<|endoftext|>";

std::string ReadSource(lmkit::io::ByteSource& src) {
  std::string out, buf(777, '\0');  // an odd read size: separators and documents split across reads
  for (;;) {
    auto n = src.Read(buf.data(), buf.size());
    REQUIRE(n.ok());
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

std::string ReadRange(Corpus& c, uint64_t begin, uint64_t end) {
  auto src = c.Open(begin, end);
  REQUIRE(src.ok());
  return ReadSource(**src);
}

Corpus Make(std::vector<std::string> inputs, std::string separator = kSep) {
  CorpusOptions o;
  o.inputs = std::move(inputs);
  o.doc_separator = std::move(separator);
  auto c = Corpus::Create(o);
  REQUIRE(c.ok());
  return std::move(*c);
}

// A cut rule for documents: right after a separator.
lmkit::io::CutRule AfterSeparator() {
  lmkit::io::CutRule rule;
  rule.is_cut = [](std::string_view t, size_t c) {
    return c >= kSep.size() && t.substr(c - kSep.size(), kSep.size()) == kSep;
  };
  rule.before = kSep.size();
  rule.after = 0;
  return rule;
}

// For N = 1..7 the ranges between FirstCut(k * total / N) concatenate to the whole text, and every inner cut is a
// document boundary.
void CheckRanges(Corpus& c, const std::string& whole) {
  auto total = c.Total();
  REQUIRE(total.ok());
  for (uint64_t n = 1; n <= 7; ++n) {
    std::string joined;
    uint64_t prev = 0;
    for (uint64_t k = 1; k <= n; ++k) {
      auto cut = c.FirstCut(*total * k / n, AfterSeparator());
      REQUIRE(cut.ok());
      CHECK(*cut >= prev);
      const std::string part = ReadRange(c, prev, *cut);
      if (k < n && *cut < *total && !part.empty()) {  // a range before a cut ends with the separator
        REQUIRE(part.size() >= kSep.size());
        CHECK(part.substr(part.size() - kSep.size()) == kSep);
      }
      joined += part;
      prev = *cut;
    }
    INFO("N = " << n);
    CHECK(prev == *total);
    CHECK(joined == whole);
  }
}

}  // namespace

TEST_CASE("corpus: formats come from the name unless given", "[io][corpus]") {
  using lmkit::io::CorpusFormatFromPath;
  CHECK(CorpusFormatFromPath("a.jsonl") == CorpusFormat::kJsonl);
  CHECK(CorpusFormatFromPath("a.jsonl.zst") == CorpusFormat::kJsonl);
  CHECK(CorpusFormatFromPath("dolma.json.gz") == CorpusFormat::kJsonl);
  CHECK(CorpusFormatFromPath("x.ndjson.zstd") == CorpusFormat::kJsonl);
  CHECK(CorpusFormatFromPath("train-00001.parquet") == CorpusFormat::kParquet);
  CHECK(CorpusFormatFromPath("owt.txt.gz") == CorpusFormat::kText);
  CHECK(CorpusFormatFromPath("-") == CorpusFormat::kText);
  CHECK(lmkit::io::CorpusFormatFromName("parquet").value() == CorpusFormat::kParquet);
  auto bad = lmkit::io::CorpusFormatFromName("csv");
  CHECK(bad.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(bad.status().ToString() == "input_format 'csv': expected text, jsonl or parquet");
}

TEST_CASE("corpus: option errors name their fields", "[io][corpus]") {
  auto err = [](CorpusOptions o, std::string_view def = {}) { return Corpus::Create(std::move(o), def).status(); };
  CHECK(err({}).ToString() == "no input files");
  CHECK(err({{"a.txt", "b.jsonl"}}).ToString() ==
        "inputs: text files mixed with JSONL/Parquet files; give one kind (input_format sets the format of all)");
  CHECK(err({{"b.jsonl"}}).ToString() == "JSONL and Parquet documents need a separator: give doc_separator");
  CHECK(err({{"b.jsonl"}}, kSep).ok());
  CHECK(err({{"a.txt"}, std::nullopt, "text", "\n"}).ToString() ==
        "doc_separator joins JSONL and Parquet documents; these inputs are text");
  CHECK(err({{"b.jsonl"}, std::nullopt, "", "\n"}).ToString() == "text_field must not be empty");
  CHECK(err({{"-"}, CorpusFormat::kParquet, "text", "\n"}).code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(err({{"a.txt", "b.jsonl"}, CorpusFormat::kJsonl, "text", "\n"}).ok());  // one format for all
  CHECK(lmkit::io::HasDocuments({{"a.txt", "b.parquet"}}));
  CHECK_FALSE(lmkit::io::HasDocuments({{"a.txt", "b.parquet"}, CorpusFormat::kText}));
}

TEST_CASE("corpus: JSONL, gzip and zstd JSONL and Parquet read as the joined documents", "[io][corpus]") {
  TempDir dir;
  const auto docs = lmkit::test::CorpusEnDocs();
  const std::string jsonl = lmkit::test::Jsonl(docs);
  WriteAll(dir.file("c.jsonl"), jsonl);
  WriteAll(dir.file("c.jsonl.gz"), lmkit::test::Gzip(jsonl));
  WriteAll(dir.file("c.jsonl.zst"), lmkit::test::Zstd(jsonl));
  std::vector<std::string> names = {"c.jsonl", "c.jsonl.gz", "c.jsonl.zst"};
  std::vector<std::string> paths;
  for (const auto& n : names) paths.push_back(dir.file(n));
  if (lmkit::io::ParquetBuilt()) {
    paths.push_back(lmkit::test::TestData("corpora/docs.parquet"));
  } else {
    LMKIT_SKIP_PART("this lmkit was built without Parquet: its Parquet case");
  }
  const std::string whole = lmkit::test::Join(docs, kSep);
  for (const auto& p : paths) {
    INFO(p);
    Corpus c = Make({p});
    CHECK(c.documents());
    auto src = c.Open();
    REQUIRE(src.ok());
    CHECK(ReadSource(**src) == whole);
    CheckRanges(c, whole);
  }
  // Several files are one sequence of documents: the separator also joins the last of one and the first of the next.
  Corpus many = Make({dir.file("c.jsonl.zst"), dir.file("c.jsonl")});
  auto src = many.Open();
  REQUIRE(src.ok());
  CHECK(ReadSource(**src) == whole + kSep + whole);
  CheckRanges(many, whole + kSep + whole);
  auto total = many.Total();
  REQUIRE(total.ok());
  CHECK(*total == 2 * jsonl.size());  // JSONL units: bytes of the decompressed files
}

TEST_CASE("corpus: text files, plain or compressed, concatenate byte for byte, and ranges are byte ranges",
          "[io][corpus]") {
  TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  WriteAll(dir.file("a.txt"), text.substr(0, 50001));
  WriteAll(dir.file("b.txt.gz"), lmkit::test::Gzip(text.substr(50001, 40000)));
  WriteAll(dir.file("c"), lmkit::test::Zstd(text.substr(90001)));
  Corpus c = Make({dir.file("a.txt"), dir.file("b.txt.gz"), dir.file("c")}, "");
  CHECK_FALSE(c.documents());
  auto src = c.Open();
  REQUIRE(src.ok());
  CHECK(ReadSource(**src) == text);
  auto total = c.Total();
  REQUIRE(total.ok());
  CHECK(*total == text.size());
  for (uint64_t b : {uint64_t{0}, uint64_t{49990}, uint64_t{50001}, uint64_t{95000}})
    for (uint64_t e : {b, b + 17, b + 60000, uint64_t{text.size()}}) {
      if (e > text.size()) continue;
      CHECK(ReadRange(c, b, e) == text.substr(b, e - b));
    }
  // Text cuts: the first offset at or after the target that the rule accepts.
  lmkit::io::CutRule newline;
  newline.is_cut = [](std::string_view t, size_t i) { return i > 0 && t[i - 1] == '\n'; };
  newline.before = 1;
  auto cut = c.FirstCut(60000, newline);
  REQUIRE(cut.ok());
  CHECK(*cut == text.find('\n', 59999) + 1);
}

TEST_CASE("corpus: ranges need regular files, and reader errors name the file", "[io][corpus]") {
  TempDir dir;
  Corpus in = Make({"-"}, "");
  CHECK(in.Total().status().ToString() == "stdin cannot be split into shards; give files");
  WriteAll(dir.file("bad.jsonl"), "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n");
  Corpus bad = Make({dir.file("bad.jsonl")});
  auto src = bad.Open();
  REQUIRE(src.ok());
  char buf[64];
  lmkit::Status st;
  for (;;) {
    auto n = (*src)->Read(buf, sizeof buf);
    if (!n.ok()) {
      st = n.status();
      break;
    }
    REQUIRE(*n > 0);
  }
  CHECK(st.ToString() == dir.file("bad.jsonl") + ": line 2: no field \"text\"");
  Corpus missing = Make({dir.file("none.jsonl")});
  CHECK(missing.Total().status().code() == lmkit::ErrorCode::kNotFound);
}
