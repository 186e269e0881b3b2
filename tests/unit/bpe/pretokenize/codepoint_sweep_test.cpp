// The code-point sweep: every code point (surrogates aside) in five contexts, encoded with gpt2, cl100k_base and
// o200k_base, against pip's tiktoken 0.14.0. The reference ids are summarised per block of 4,096 code points as FNV-1a
// digests in tests/data/bpe-encode/codepoint_sweep.json, made by tests/scripts/tiktoken_sweep.py (which defines the
// text and the digest; `--check` re-derives them with the installed tiktoken).
#include <catch2/catch.hpp>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"
#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

constexpr uint32_t kBlock = 4096;
// Under AddressSanitizer (CI's second build, ~10x slower) every 8th block; the release build checks them all.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kStride = 8;
#else
constexpr uint32_t kStride = 1;
#endif

std::string BlockText(uint32_t block) {
  std::string text, c;
  for (uint32_t cp = block * kBlock; cp < (block + 1) * kBlock; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    c.clear();
    AppendUtf8(c, cp);
    text += "a" + c + "b A" + c + "a " + c + "'s 1" + c + "2" + c + "\n";
  }
  return text;
}

uint64_t Fnv1a64(const std::vector<uint32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint32_t id : ids) {
    for (int k = 0; k < 4; ++k) {
      h ^= (id >> (8 * k)) & 0xFF;
      h *= 0x100000001B3ull;
    }
  }
  return h;
}

}  // namespace

TEST_CASE("bpe encode: every code point in context gives tiktoken's ids (gpt2, cl100k_base, o200k_base)",
          "[bpe][encode][sweep]") {
  auto doc = ParseJson(test::ReadAll(test::TestData("bpe-encode/codepoint_sweep.json")), "codepoint_sweep.json");
  REQUIRE(doc.ok());
  REQUIRE((*doc)["block"].get<uint32_t>() == kBlock);
  for (const char* name : {"gpt2", "cl100k_base", "o200k_base"}) {
    auto tok = LoadTokenizer(name, {});
    REQUIRE(tok.ok());
    const Json& want = (*doc)["encodings"][name];
    REQUIRE(want["digests"].size() == 0x110000 / kBlock);
    Encoder enc(**tok);
    std::vector<uint32_t> ids;
    int bad = 0;
    for (uint32_t b = 0; b < 0x110000 / kBlock; b += kStride) {
      ids.clear();
      enc.EncodeOrdinary(BlockText(b), &ids);
      char hex[17];
      std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(Fnv1a64(ids)));
      if (hex != want["digests"][b].get<std::string>() || ids.size() != want["tokens"][b].get<size_t>()) {
        if (++bad <= 3)
          FAIL_CHECK(name << ": code points U+" << std::hex << b * kBlock << "..U+" << (b + 1) * kBlock - 1
                          << " differ from tiktoken (" << std::dec << ids.size() << " ids, tiktoken "
                          << want["tokens"][b].get<size_t>() << ")");
      }
    }
    CHECK(bad == 0);
  }
}
