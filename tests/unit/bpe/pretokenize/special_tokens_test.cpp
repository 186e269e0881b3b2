#include "lmkit/bpe/pretokenize/special_tokens.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

using lmkit::bpe::SpecialTokenSplitter;

namespace {
std::vector<std::string> Render(const SpecialTokenSplitter& s, std::string_view text) {
  std::vector<std::string> out;
  for (const auto& p : s.Split(text)) {
    std::string r = p.special_index >= 0 ? fmt::format("S{}:", p.special_index) : std::string("T:");
    r.append(p.text.data(), p.text.size());
    out.push_back(r);
  }
  return out;
}
}  // namespace

TEST_CASE("special tokens: split in order, specials kept apart", "[bpe][special_tokens]") {
  SpecialTokenSplitter s({"<|endoftext|>"});
  using V = std::vector<std::string>;
  CHECK(Render(s, "a<|endoftext|>b<|endoftext|><|endoftext|>") ==
        V{"T:a", "S0:<|endoftext|>", "T:b", "S0:<|endoftext|>", "S0:<|endoftext|>"});
  CHECK(Render(s, "no specials <|endoftext| here") == V{"T:no specials <|endoftext| here"});
  CHECK(Render(s, "") == V{});
  CHECK(s.max_length() == 13);
}

TEST_CASE("special tokens: the longest wins where specials overlap (CS336)", "[bpe][special_tokens]") {
  SpecialTokenSplitter s({"<|endoftext|>", "<|endoftext|><|endoftext|>"});
  using V = std::vector<std::string>;
  CHECK(Render(s, "x<|endoftext|><|endoftext|>y<|endoftext|>") ==
        V{"T:x", "S1:<|endoftext|><|endoftext|>", "T:y", "S0:<|endoftext|>"});
  // Leftmost beats longest: "ab" starts earlier than "bcd".
  SpecialTokenSplitter t({"bcd", "ab", "", "ab"});
  CHECK(Render(t, "abcd bcd") == V{"S1:ab", "T:cd ", "S0:bcd"});
}

TEST_CASE("special tokens: several first bytes and binary data", "[bpe][special_tokens]") {
  SpecialTokenSplitter s({"[SEP]", "<s>", std::string("\0\xff", 2)});
  using V = std::vector<std::string>;
  CHECK(Render(s, std::string("<s>a[SEP]\0\xff[SE", 14)) ==
        V{"S1:<s>", "T:a", "S0:[SEP]", std::string("S2:\0\xff", 5), "T:[SE"});
  SpecialTokenSplitter none{std::vector<std::string>{}};
  CHECK(none.empty());
  CHECK(Render(none, "<s>") == V{"T:<s>"});
}
