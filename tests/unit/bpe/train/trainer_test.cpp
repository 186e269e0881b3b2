// BPE training: the CS336 golden run and small cases whose merges are worked out by hand in the comments.
#include "lmkit/bpe/train/trainer.h"

#include <catch2/catch.hpp>
#include <set>

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

using namespace lmkit::bpe;
using Merges = std::vector<std::pair<std::string, std::string>>;

namespace {

BpeModel Train(std::string_view text, size_t vocab, std::vector<std::string> specials = {}, unsigned threads = 1) {
  BpeTrainOptions o;
  o.vocab_size = vocab;
  o.special_tokens = std::move(specials);
  o.threads = threads;
  auto r = TrainBpeOnText(text, o);
  REQUIRE(r.ok());
  return r->model;
}

Merges MergeBytes(const BpeModel& m) {
  Merges out;
  for (const auto& [a, b] : m.merges) out.emplace_back(m.vocab[a], m.vocab[b]);
  return out;
}

Merges ReferenceMerges() {
  Merges out;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/train-bpe-reference-merges.txt"));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    auto a = PrintableToBytes(line.substr(0, sp));
    auto b = PrintableToBytes(line.substr(sp + 1));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    out.emplace_back(*a, *b);
  }
  return out;
}

}  // namespace

TEST_CASE("bpe train: CS336 golden run (corpus.en, vocab 500, <|endoftext|>)", "[bpe][trainer]") {
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  const BpeModel m = Train(text, 500, {"<|endoftext|>"});
  const Merges ref = ReferenceMerges();
  REQUIRE(ref.size() == 243);
  CHECK(MergeBytes(m) == ref);  // same merges in the same order
  // The vocabulary: the same set of byte strings as the reference vocab.json (whose keys are printable forms).
  auto refvocab =
      lmkit::ParseJson(lmkit::test::ReadAll(lmkit::test::TestData("bpe/train-bpe-reference-vocab.json")), "ref");
  REQUIRE(refvocab.ok());
  std::set<std::string> want, got(m.vocab.begin(), m.vocab.end());
  for (auto it = refvocab->begin(); it != refvocab->end(); ++it) want.insert(*PrintableToBytes(it.key()));
  CHECK(got == want);
  CHECK(m.vocab.size() == 500);
  CHECK(m.vocab[0] == "<|endoftext|>");
  CHECK(m.vocab[1] == std::string(1, '\0'));
  CHECK(m.num_specials == 1);
}

TEST_CASE("bpe train: identical for every thread count and block size", "[bpe][trainer]") {
  lmkit::test::TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en")) +
                           lmkit::test::ReadAll(lmkit::test::TestData("bpe/tinystories_sample.txt"));
  lmkit::test::WriteAll(dir.file("a.txt"), text.substr(0, 50000));
  lmkit::test::WriteAll(dir.file("b.txt"), text.substr(50000));
  const BpeModel whole = Train(text, 700, {"<|endoftext|>"});
  for (unsigned threads : {1u, 2u, 3u}) {
    for (size_t block : {size_t{4096}, size_t{65536}, size_t{1} << 26}) {
      BpeTrainOptions o;
      o.corpus.inputs = {dir.file("a.txt"), dir.file("b.txt")};
      o.vocab_size = 700;
      o.special_tokens = {"<|endoftext|>"};
      o.threads = threads;
      o.block_bytes = block;
      auto r = TrainBpe(o, nullptr);
      REQUIRE(r.ok());
      INFO("threads " << threads << " block " << block);
      CHECK(r->model.vocab == whole.vocab);
      CHECK(r->model.merges == whole.merges);
      CHECK(r->stats.input_bytes == text.size());
    }
  }
  // Without specials the blocks are cut at safe pre-token boundaries only.
  BpeTrainOptions o;
  o.corpus.inputs = {dir.file("a.txt"), dir.file("b.txt")};
  o.vocab_size = 600;
  o.threads = 2;
  o.block_bytes = 5000;
  auto r = TrainBpe(o, nullptr);
  REQUIRE(r.ok());
  CHECK(r->model.merges == Train(text, 600).merges);
}

TEST_CASE("bpe train: the handout's worked example", "[bpe][trainer]") {
  // Counts {low: 5, lower: 2, widest: 3, newest: 6} (one word per line, so no leading spaces). Ties: ("s","t") and
  // ("e","s") both 9 -> "s t"; ("o","w") beats ("l","o"); ("w","est") beats ("n","e") and ("e","w").
  std::string text;
  for (auto [w, n] : std::vector<std::pair<std::string, int>>{{"low", 5}, {"lower", 2}, {"widest", 3}, {"newest", 6}})
    for (int i = 0; i < n; ++i) text += w + "\n";
  const BpeModel m = Train(text, 256 + 7);
  CHECK(MergeBytes(m) ==
        Merges{{"s", "t"}, {"e", "st"}, {"o", "w"}, {"l", "ow"}, {"w", "est"}, {"n", "e"}, {"ne", "west"}});
  CHECK(m.vocab.back() == "newest");
}

TEST_CASE("bpe train: ties go to the greater pair of byte strings, bytes compared unsigned", "[bpe][trainer]") {
  CHECK(MergeBytes(Train("ab\nba\n", 257)) == Merges{{"b", "a"}});
  // 0xC3 0xA9 ("é") beats "zz": byte 0xC3 > 'z' as unsigned.
  CHECK(MergeBytes(Train("zz\n\xc3\xa9\n", 257)) == Merges{{"\xc3", "\xa9"}});
  // After "a a": "aa aa" and "aa a" tie at 1 -> second elements "aa" > "a".
  CHECK(MergeBytes(Train("aaaaa", 258)) == Merges{{"a", "a"}, {"aa", "aa"}});
}

TEST_CASE("bpe train: overlapping repeats merge left to right", "[bpe][trainer]") {
  // "aaa" -> "aa a" (not "a aa"), so the second merge is ("aa", "a").
  CHECK(MergeBytes(Train("aaa", 258)) == Merges{{"a", "a"}, {"aa", "a"}});
  CHECK(MergeBytes(Train("aaaa", 260)) == Merges{{"a", "a"}, {"aa", "aa"}});  // then nothing is left to merge
}

TEST_CASE("bpe train: no merge across a special token - the longest special wins", "[bpe][trainer]") {
  // Without the split, "x<" and "|y" would be pairs. With it, only single-byte words remain.
  const BpeModel m = Train("x<|endoftext|>y<|endoftext|>x", 1000, {"<|endoftext|>"});
  CHECK(m.merges.empty());
  CHECK(m.vocab.size() == 257);
  // "<s>x" contains "<s>": on "<s>xy" the longer one is split out, leaving "y" alone (no pair).
  CHECK(Train("<s>xy<s>xy", 300, {"<s>", "<s>x"}).merges.empty());
  CHECK(MergeBytes(Train("<s>xy<s>xy", 258, {"<s>"})) == Merges{{"x", "y"}});
}

TEST_CASE("bpe train: empty input, no specials, invalid UTF-8", "[bpe][trainer]") {
  const BpeModel e = Train("", 300, {"<|endoftext|>"});
  CHECK(e.merges.empty());
  CHECK(e.vocab.size() == 257);
  const BpeModel n = Train("hello hello", 258);
  CHECK(n.num_specials == 0);
  CHECK(n.vocab[0] == std::string(1, '\0'));
  CHECK(MergeBytes(n).size() == 2);
  // Invalid bytes are characters of class "other" and merge like any bytes: "\xff\xfe\xff\xfe" is one pre-token.
  CHECK(MergeBytes(Train("\xff\xfe\xff\xfe", 258)) == Merges{{"\xff", "\xfe"}, {"\xff\xfe", "\xff\xfe"}});
}

TEST_CASE("bpe train: usage errors", "[bpe][trainer]") {
  BpeTrainOptions o;
  o.vocab_size = 256;
  o.special_tokens = {"<|endoftext|>"};
  CHECK(TrainBpeOnText("abc", o).status().code() == lmkit::ErrorCode::kInvalidArgument);
  o.vocab_size = 300;
  o.special_tokens = {"x"};
  CHECK(TrainBpeOnText("abc", o).status().code() == lmkit::ErrorCode::kInvalidArgument);
  o.special_tokens = {};
  CHECK(TrainBpe(o, nullptr).status().code() == lmkit::ErrorCode::kInvalidArgument);  // no inputs
  o.corpus.inputs = {"/nonexistent/x.txt"};
  CHECK_FALSE(TrainBpe(o, nullptr).ok());
}
