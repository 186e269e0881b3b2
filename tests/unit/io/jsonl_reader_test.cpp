// JsonlReader: each line's string field, unescaped, with the line's offset; blank lines skipped; every malformed
// line an error naming the file and the line.
#include "lmkit/io/jsonl_reader.h"

#include <catch2/catch.hpp>

#include "lmkit/io/byte_source.h"
#include "support/corpus_fixtures.h"

using lmkit::io::JsonlReader;
using lmkit::io::StringSource;

namespace {

struct Doc {
  std::string text;
  uint64_t offset;
};

// Every document of `jsonl` (read in reads of at most `max_read` bytes), or the error.
lmkit::Result<std::vector<Doc>> Docs(const std::string& jsonl, const std::string& field = "text", uint64_t start = 0,
                                     bool skip = false, size_t max_read = SIZE_MAX) {
  JsonlReader r(std::make_unique<StringSource>(std::string_view(jsonl).substr(start), max_read), "c.jsonl", field,
                start, skip);
  std::vector<Doc> out;
  for (;;) {
    std::string_view doc;
    uint64_t offset = 0;
    LMKIT_ASSIGN_OR_RETURN(bool more, r.Next(&doc, &offset));
    if (!more) return out;
    out.push_back({std::string(doc), offset});
  }
}

std::string JsonlError(const std::string& jsonl, const std::string& field = "text") {
  auto d = Docs(jsonl, field);
  REQUIRE(!d.ok());
  CHECK(d.status().code() == lmkit::ErrorCode::kInvalidInput);
  return d.status().ToString();
}

}  // namespace

TEST_CASE("jsonl reader: the field of each line, unescaped, with its offset", "[io][corpus]") {
  const std::string jsonl =
      "{\"id\": 1, \"meta\": {\"text\": \"not this\"}, \"text\": \"caf\\u00e9 \\\"q\\\"\\n\\\\ \\ud83d\\ude00\"}\n"
      "\n"
      "   \r\n"
      "{\"text\":\"\"}\r\n"
      "{\"text\": \"no newline at the end\", \"x\": [1, 2]}";
  auto d = Docs(jsonl);
  REQUIRE(d.ok());
  REQUIRE(d->size() == 3);
  CHECK((*d)[0].text == "caf\xc3\xa9 \"q\"\n\\ \xf0\x9f\x98\x80");
  CHECK((*d)[0].offset == 0);
  CHECK((*d)[1].text.empty());
  CHECK((*d)[1].offset == jsonl.find("{\"text\":\"\"}"));
  CHECK((*d)[2].text == "no newline at the end");
  CHECK((*d)[2].offset == jsonl.rfind('\n') + 1);
}

TEST_CASE("jsonl reader: corpus.en documents round-trip through JSONL in reads of any size", "[io][corpus]") {
  const auto docs = lmkit::test::CorpusEnDocs();
  REQUIRE(docs.size() == 51);
  const std::string jsonl = lmkit::test::Jsonl(docs);
  for (size_t max_read : {size_t{3}, size_t{1000}, SIZE_MAX}) {
    auto d = Docs(jsonl, "text", 0, false, max_read);
    REQUIRE(d.ok());
    REQUIRE(d->size() == docs.size());
    for (size_t i = 0; i < docs.size(); ++i) CHECK((*d)[i].text == docs[i]);
  }
}

TEST_CASE("jsonl reader: a line longer than the buffer", "[io][corpus]") {
  const std::string big(3 << 20, 'x');
  auto d = Docs("{\"text\": \"a\"}\n{\"text\": \"" + big + "\"}\n{\"text\": \"b\"}\n");
  REQUIRE(d.ok());
  REQUIRE(d->size() == 3);
  CHECK((*d)[1].text == big);
  CHECK((*d)[2].text == "b");
}

TEST_CASE("jsonl reader: starting inside the file skips the partial line", "[io][corpus]") {
  const std::string jsonl = "{\"text\": \"one\"}\n{\"text\": \"two\"}\n{\"text\": \"three\"}\n";
  const uint64_t second = jsonl.find("{\"text\": \"two");
  auto mid = Docs(jsonl, "text", 5, true);  // inside line 1
  REQUIRE(mid.ok());
  REQUIRE(mid->size() == 2);
  CHECK((*mid)[0].text == "two");
  CHECK((*mid)[0].offset == second);
  auto at = Docs(jsonl, "text", second - 1, true);  // on the newline before line 2: line 2 is the first
  REQUIRE(at.ok());
  CHECK(at->front().text == "two");
  // Line numbers are unknown there: the error names the byte offset instead.
  const std::string bad = "{\"text\": \"one\"}\n{\"text\": 2}\n";
  auto e = Docs(bad, "text", 3, true);
  REQUIRE(!e.ok());
  CHECK(e.status().ToString() == "c.jsonl: the line at byte 16: field \"text\" is a number, expected a string");
}

TEST_CASE("jsonl reader: malformed lines are one-line errors naming the line", "[io][corpus]") {
  const std::string ok = "{\"text\": \"fine\"}\n";
  CHECK(JsonlError(ok + "{\"text\": \"unterminated}\n").rfind("c.jsonl: line 2: malformed JSON (", 0) == 0);
  CHECK(JsonlError(ok + ok + "{\"text\": \"a\"} {\"text\": \"b\"}\n").rfind("c.jsonl: line 3: malformed JSON (", 0) ==
        0);
  CHECK(JsonlError("[\"text\"]\n") == "c.jsonl: line 1: expected a JSON object, got an array");
  CHECK(JsonlError("\"text\"\n") == "c.jsonl: line 1: expected a JSON object, got a string");
  CHECK(JsonlError(ok + "\n{\"content\": \"x\"}\n") == "c.jsonl: line 3: no field \"text\"");
  CHECK(JsonlError("{\"text\": 12}\n") == "c.jsonl: line 1: field \"text\" is a number, expected a string");
  CHECK(JsonlError("{\"text\": null}\n") == "c.jsonl: line 1: field \"text\" is null, expected a string");
  CHECK(JsonlError("{\"text\": [\"a\"]}\n") == "c.jsonl: line 1: field \"text\" is an array, expected a string");
  CHECK(JsonlError("{\"text\": \"\xff\xfe\"}\n").rfind("c.jsonl: line 1: malformed JSON (", 0) == 0);  // not UTF-8
  // Another field name.
  auto d = Docs("{\"body\": \"x y\"}\n", "body");
  REQUIRE(d.ok());
  CHECK(d->at(0).text == "x y");
  CHECK(JsonlError("{\"body\": \"x y\"}\n", "content") == "c.jsonl: line 1: no field \"content\"");
}

TEST_CASE("jsonl reader: a line past the limit is an error, not a buffer that grows without end", "[io][corpus]") {
  const std::string jsonl = "{\"text\": \"a\"}\n{\"text\": \"" + std::string(1 << 20, 'x') + "\"}\n";
  JsonlReader r(std::make_unique<StringSource>(jsonl), "big.jsonl", "text", 0, false, 4096);
  std::string_view doc;
  uint64_t offset = 0;
  auto first = r.Next(&doc, &offset);
  REQUIRE(first.ok());
  CHECK(doc == "a");
  auto second = r.Next(&doc, &offset);
  REQUIRE(!second.ok());
  CHECK(second.status().ToString() == "big.jsonl: line 2: longer than 4096 bytes (is this JSONL?)");
}
