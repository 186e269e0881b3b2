// Counts files: round trip, byte-stable output, and a clear error for every kind of damage.
#include "lmkit/bpe/train/counts_file.h"

#include <catch2/catch.hpp>
#include <map>

#include "lmkit/bpe/train/pretoken_table.h"

using lmkit::bpe::CountsHeader;
using lmkit::bpe::ParseCounts;
using lmkit::bpe::PretokenTable;
using lmkit::bpe::SerializeCounts;

namespace {

std::map<std::string, uint64_t> Contents(const PretokenTable& t) {
  std::map<std::string, uint64_t> m;
  t.ForEach([&](std::string_view k, uint64_t c) { m[std::string(k)] += c; });
  return m;
}

PretokenTable Sample() {
  PretokenTable t;
  t.Add(" the", 5);
  t.Add("a", 1);
  t.Add(" extraordinarily", uint64_t{1} << 40);  // longer than 8 bytes, count past 32 bits
  t.Add(std::string("\0\xff", 2), 3);
  t.Add(" the", 2);
  return t;
}

CountsHeader Header() {
  CountsHeader h;
  h.shard_k = 1;
  h.shard_n = 3;
  h.corpus_bytes = 1000;
  h.range_begin = 300;
  h.range_end = 700;
  h.specials = {"<|endoftext|>", "<pad>"};
  return h;
}

}  // namespace

TEST_CASE("counts file: round trip", "[bpe][counts]") {
  const PretokenTable t = Sample();
  const std::string bytes = SerializeCounts(Header(), t);
  PretokenTable back;
  auto h = ParseCounts(bytes, "x.counts", &back);
  REQUIRE(h.ok());
  CHECK(h->shard_k == 1);
  CHECK(h->shard_n == 3);
  CHECK(h->corpus_bytes == 1000);
  CHECK(h->range_begin == 300);
  CHECK(h->range_end == 700);
  CHECK(h->entries == 4);
  CHECK(h->total == 11 + (uint64_t{1} << 40));
  CHECK(h->pattern == "gpt2");
  CHECK(h->specials == std::vector<std::string>{"<|endoftext|>", "<pad>"});
  CHECK(Contents(back) == Contents(t));
  CHECK(Contents(back)[" the"] == 7);
  CHECK(bytes.substr(0, 8) == "LMKITCNT");
  CHECK(bytes.substr(bytes.size() - 4) == "LKCE");
}

TEST_CASE("counts file: bytes do not depend on insertion order", "[bpe][counts]") {
  PretokenTable a, b;
  a.Add("x", 1);
  a.Add("yy", 2);
  a.Add("zzz", 3);
  b.Add("zzz", 3);
  b.Add("x", 1);
  b.Add("yy", 2);
  CHECK(SerializeCounts(Header(), a) == SerializeCounts(Header(), b));
}

TEST_CASE("counts file: CRC-32 is zlib's", "[bpe][counts]") {
  CHECK(lmkit::bpe::Crc32("123456789") == 0xCBF43926u);  // the standard check value
  CHECK(lmkit::bpe::Crc32("") == 0u);
}

TEST_CASE("counts file: every truncation is an error", "[bpe][counts]") {
  const std::string bytes = SerializeCounts(Header(), Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = ParseCounts(bytes.substr(0, n), "part-1.counts", nullptr);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == lmkit::ErrorCode::kInvalidInput);
    CHECK(r.status().subject() == "part-1.counts");
  }
  auto r = ParseCounts(bytes.substr(0, bytes.size() - 5), "p", nullptr);
  CHECK_THAT(r.status().message(), Catch::Contains("truncated"));
}

TEST_CASE("counts file: damage is caught by the checksum", "[bpe][counts]") {
  const std::string bytes = SerializeCounts(Header(), Sample());
  for (size_t i = 8; i + 8 < bytes.size(); i += 3) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    auto r = ParseCounts(bad, "p", nullptr);
    REQUIRE_FALSE(r.ok());
  }
  std::string bad = bytes;
  bad[bytes.size() / 2] ^= 1;
  CHECK_THAT(ParseCounts(bad, "p", nullptr).status().message(), Catch::Contains("checksum mismatch"));
  CHECK_THAT(ParseCounts("hello world, not counts", "p", nullptr).status().message(),
             Catch::Contains("not an lmkit counts file"));
  std::string v2 = bytes;
  v2[8] = 2;
  CHECK_THAT(ParseCounts(v2, "p", nullptr).status().message(), Catch::Contains("version 2"));
}

TEST_CASE("counts file: sets must match and be complete", "[bpe][counts]") {
  auto h = [](uint64_t k, uint64_t b, uint64_t e) {
    CountsHeader x = Header();
    x.shard_k = k;
    x.range_begin = b;
    x.range_end = e;
    return x;
  };
  const std::vector<std::string> p = {"p0", "p1", "p2"};
  CHECK(lmkit::bpe::CheckCountsSet({h(0, 0, 300), h(1, 300, 700), h(2, 700, 1000)}, p).ok());
  CHECK(lmkit::bpe::CheckCountsSet({h(2, 700, 1000), h(0, 0, 300), h(1, 300, 700)}, p).ok());  // any order
  auto missing = lmkit::bpe::CheckCountsSet({h(0, 0, 300), h(2, 700, 1000)}, {"p0", "p2"});
  CHECK_THAT(missing.message(), Catch::Contains("shard 1/3 is missing"));
  auto twice = lmkit::bpe::CheckCountsSet({h(0, 0, 300), h(0, 0, 300), h(1, 300, 700)}, p);
  CHECK(twice.subject() == "p1");
  CHECK_THAT(twice.message(), Catch::Contains("also in p0"));
  CountsHeader other = h(1, 300, 700);
  other.specials = {"<|endoftext|>"};
  auto sp = lmkit::bpe::CheckCountsSet({h(0, 0, 300), other, h(2, 700, 1000)}, p);
  CHECK(sp.subject() == "p1");
  CHECK_THAT(sp.message(), Catch::Contains("special tokens"));
  CountsHeader pat = h(2, 700, 1000);
  pat.pattern = "o200k";
  CHECK_THAT(lmkit::bpe::CheckCountsSet({h(0, 0, 300), h(1, 300, 700), pat}, p).message(), Catch::Contains("pattern"));
  auto gap = lmkit::bpe::CheckCountsSet({h(0, 0, 300), h(1, 301, 700), h(2, 700, 1000)}, p);
  CHECK_THAT(gap.message(), Catch::Contains("cut differently"));
}
