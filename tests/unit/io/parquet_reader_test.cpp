// ParquetTextReader: the string column of each row group in order (string and large_string), seeks to a row group,
// and one-line errors for a missing column, a non-string column, a null value and a file that is not Parquet. The
// fixtures are tests/data/corpora/*.parquet (tests/scripts/make_corpus_fixtures.py).
#include "lmkit/io/parquet_reader.h"

#include <catch2/catch.hpp>

#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::TestData;

namespace {

bool SkipWithoutParquet() {
  if (lmkit::io::ParquetBuilt()) return false;
  auto r = lmkit::io::OpenParquetText(TestData("corpora/docs.parquet"), "text");
  CHECK(r.status().code() == lmkit::ErrorCode::kUnsupported);
  CHECK(r.status().message().find("built without Parquet support") != std::string::npos);
  CHECK(r.status().message().find("-DLMKIT_PARQUET=ON") != std::string::npos);
  LMKIT_SKIP_PART("this lmkit was built without Parquet (no pyarrow at configure time): Parquet test");
  return true;
}

std::vector<std::pair<std::string, int>> ReadAllValues(lmkit::io::ParquetTextReader& r) {
  std::vector<std::pair<std::string, int>> out;
  for (;;) {
    std::string_view v;
    int g = -1;
    auto more = r.Next(&v, &g);
    REQUIRE(more.ok());
    if (!*more) return out;
    out.emplace_back(std::string(v), g);
  }
}

}  // namespace

TEST_CASE("parquet reader: the documents of every row group, in order", "[io][corpus][parquet]") {
  if (SkipWithoutParquet()) return;
  const auto docs = lmkit::test::CorpusEnDocs();
  auto r = lmkit::io::OpenParquetText(TestData("corpora/docs.parquet"), "text");
  REQUIRE(r.ok());
  REQUIRE((*r)->row_groups() == 11);  // 5 documents each, the last 1
  uint64_t rows = 0;
  for (int g = 0; g < 11; ++g) {
    rows += (*r)->rows(g);
    CHECK((*r)->column_bytes(g) > 0);
  }
  CHECK(rows == docs.size());
  const auto values = ReadAllValues(**r);
  REQUIRE(values.size() == docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    CHECK(values[i].first == docs[i]);
    CHECK(values[i].second == static_cast<int>(i / 5));
  }
  REQUIRE((*r)->Seek(7).ok());
  std::string_view v;
  int g = -1;
  auto more = (*r)->Next(&v, &g);
  REQUIRE(more.ok());
  REQUIRE(*more);
  CHECK(v == docs[35]);
  CHECK(g == 7);
  REQUIRE((*r)->Seek(11).ok());  // the end
  more = (*r)->Next(&v, &g);
  REQUIRE(more.ok());
  CHECK_FALSE(*more);
}

TEST_CASE("parquet reader: a large_string column of another name", "[io][corpus][parquet]") {
  if (SkipWithoutParquet()) return;
  auto r = lmkit::io::OpenParquetText(TestData("corpora/docs_large.parquet"), "content");
  REQUIRE(r.ok());
  CHECK((*r)->row_groups() == 2);
  std::vector<std::string> got;
  for (const auto& [v, g] : ReadAllValues(**r)) got.push_back(v);
  CHECK(got == lmkit::test::CorpusEnDocs());
}

TEST_CASE("parquet reader: bad inputs are one-line errors naming the file", "[io][corpus][parquet]") {
  if (SkipWithoutParquet()) return;
  const std::string docs = TestData("corpora/docs.parquet");
  auto none = lmkit::io::OpenParquetText(docs, "body");
  CHECK(none.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(none.status().ToString() == docs + ": no column \"body\" (its columns: id, text)");
  auto ints = lmkit::io::OpenParquetText(TestData("corpora/int_text.parquet"), "text");
  CHECK(ints.status().ToString() ==
        TestData("corpora/int_text.parquet") + ": column \"text\" is int64, expected strings");
  auto id = lmkit::io::OpenParquetText(docs, "id");
  CHECK(id.status().message() == "column \"id\" is int64, expected strings");
  auto text = lmkit::io::OpenParquetText(TestData("bpe/corpus.en"), "text");
  CHECK(text.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(text.status().message().rfind("not a Parquet file (", 0) == 0);
  auto missing = lmkit::io::OpenParquetText(TestData("corpora/nope.parquet"), "text");
  CHECK(missing.status().code() == lmkit::ErrorCode::kNotFound);

  auto nulls = lmkit::io::OpenParquetText(TestData("corpora/null_text.parquet"), "text");
  REQUIRE(nulls.ok());
  std::string_view v;
  int g = -1;
  for (const char* want : {"a b", "c d"}) {
    auto more = (*nulls)->Next(&v, &g);
    REQUIRE(more.ok());
    CHECK(v == want);
  }
  auto bad = (*nulls)->Next(&v, &g);
  REQUIRE(!bad.ok());
  CHECK(bad.status().ToString() == TestData("corpora/null_text.parquet") + ": row group 1: row 0 is null");
}
