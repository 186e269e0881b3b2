// Hugging Face's NFC/NFD/NFKC/NFKD (Unicode 9.0 tables) on every code point: tests/data/bpe/hf_unicode9/norm_hashes.txt
// holds FNV-1a 64 hashes of HF tokenizers 0.23.3's output (scripts/hf_unicode9_norm.py goldens) for each block of
// 4096 code points in four contexts (alone, before U+0334 of class 1, after U+0345 of class 240, after "a") and for
// every canonical composition pair of Unicode 15.0; lmkit's normalizer steps must hash the same.
#include "lmkit/bpe/pretokenize/unicode9_normalization.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lmkit/bpe/pretokenize/hf_pipeline.h"
#include "lmkit/common/utf8.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

std::string BlockText(uint32_t block) {
  std::string s;
  for (uint32_t cp = block * 4096; cp < (block + 1) * 4096 && cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    AppendUtf8(s, cp);
    s += '\n';
    AppendUtf8(s, cp);
    s += "\xCC\xB4\n\xCD\x85";  // U+0334, U+0345
    AppendUtf8(s, cp);
    s += "\na";
    AppendUtf8(s, cp);
    s += '\n';
  }
  return s;
}

std::string Normalized(NormalizerStep::Kind kind, std::string_view text) {
  Pipeline p;
  NormalizerStep step;
  step.kind = kind;
  p.normalizer.push_back(step);
  std::string out;
  p.Normalize(text, &out);
  return out;
}

}  // namespace

TEST_CASE("unicode9 normalization: every code point normalizes as Hugging Face's Unicode 9.0 forms",
          "[unicode9][hf_pipeline]") {
  std::ifstream f(std::string(LMKIT_TEST_DATA_DIR) + "/bpe/hf_unicode9/norm_hashes.txt");
  REQUIRE(f);
  const NormalizerStep::Kind forms[] = {NormalizerStep::Kind::kNfc, NormalizerStep::Kind::kNfd,
                                        NormalizerStep::Kind::kNfkc, NormalizerStep::Kind::kNfkd};
  std::vector<std::pair<std::string, std::vector<uint64_t>>> texts;  // name -> the four hashes
  std::string pairs;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "pair") {
      uint32_t x = 0, y = 0;
      in >> std::hex >> x >> y;
      AppendUtf8(pairs, x);
      AppendUtf8(pairs, y);
      pairs += '\n';
      AppendUtf8(pairs, x);
      pairs += "\xCC\xB4";
      AppendUtf8(pairs, y);
      pairs += '\n';
      continue;
    }
    std::string name = word;
    if (word == "block") {
      in >> word;
      name += " " + word;
    }
    std::vector<uint64_t> h(4);
    for (uint64_t& v : h) in >> std::hex >> v;
    REQUIRE(in);
    texts.push_back({name, h});
  }
  REQUIRE(texts.size() == 0x110000 / 4096 + 1);
  REQUIRE(!pairs.empty());
  size_t checked = 0;
  for (const auto& [name, want] : texts) {
    std::string text;
    if (name == "pairs") {
      text = pairs;
    } else {
      text = BlockText(static_cast<uint32_t>(std::stoul(name.substr(6), nullptr, 16)));
    }
    for (int k = 0; k < 4; ++k) {
      INFO(name << " form " << k);
      CHECK(Fnv1a64(Normalized(forms[k], text)) == want[static_cast<size_t>(k)]);
      ++checked;
    }
  }
  CHECK(checked == texts.size() * 4);
}

TEST_CASE("unicode9 normalization: later code points are barriers", "[unicode9][hf_pipeline]") {
  // HfNormalForm skips lead bytes below 0xDF (code points below U+07C0) without decoding them.
  REQUIRE(kLaterNormalizing[0].first >= 0x7C0);
  for (size_t i = 1; i < kLaterNormalizingCount; ++i) CHECK(kLaterNormalizing[i - 1].last < kLaterNormalizing[i].first);
  CHECK(IsLaterNormalizing(0x1DF9));
  CHECK(IsLaterNormalizing(0xA7F2));
  CHECK(IsLaterNormalizing(0x11938));
  CHECK_FALSE(IsLaterNormalizing(0x301));
  CHECK_FALSE(IsLaterNormalizing(0xAC00));
  // U+0617 (class 230) before U+1DF9 (220, Unicode 10.0): HF keeps the order; Unicode 15.0 would swap them.
  CHECK(Normalized(NormalizerStep::Kind::kNfc, "a\u0617\u1DF9") == "a\u0617\u1DF9");
  // MODIFIER LETTER CAPITAL C (14.0) has no compatibility decomposition for HF.
  CHECK(Normalized(NormalizerStep::Kind::kNfkc, "x\uA7F2\u0301e\u0301") == "x\uA7F2\u0301\u00E9");
  // Dives Akuru E + AA (13.0) do not compose to U+11938; the text around still does.
  CHECK(Normalized(NormalizerStep::Kind::kNfc, "e\u0301\U00011935\U00011930") == "\u00E9\U00011935\U00011930");
  CHECK(Normalized(NormalizerStep::Kind::kNfd, "\u00E9\U00011938\u00E9") == "e\u0301\U00011938e\u0301");
}
