// The SWAR run scanners against their byte-at-a-time references: every byte value at every lane of a word, every
// class boundary, runs crossing 8-byte words and the end of the text, and random text.
#include "lmkit/bpe/pretokenize/ascii_runs.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "lmkit/bpe/pretokenize/pretokenizer_ascii.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"

using namespace lmkit::bpe;

namespace {

struct Kernel {
  const char* name;
  size_t (*fast)(const char*, size_t, size_t);
  size_t (*ref)(const char*, size_t, size_t);
};
const Kernel kKernels[] = {{"letter", ascii::LetterRunEnd, ascii::LetterRunEndScalar},
                           {"upper", ascii::UpperRunEnd, ascii::UpperRunEndScalar},
                           {"lower", ascii::LowerRunEnd, ascii::LowerRunEndScalar}};

// Both scanners from every start position of `text`, and with the text cut short at every length.
void CheckAll(const std::string& text) {
  for (const Kernel& k : kKernels) {
    for (size_t n = 0; n <= text.size(); ++n) {
      for (size_t pos = 0; pos <= n; ++pos) {
        const size_t want = k.ref(text.data(), pos, n);
        const size_t got = k.fast(text.data(), pos, n);
        if (got != want) {
          INFO(k.name << " pos " << pos << " n " << n);
          REQUIRE(got == want);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("ascii runs: the references classify as their names say", "[bpe][pretokenizer][ascii]") {
  for (int b = 0; b < 256; ++b) {
    const auto c = static_cast<unsigned char>(b);
    CHECK(ascii::IsUpper(c) == (b >= 'A' && b <= 'Z'));
    CHECK(ascii::IsLower(c) == (b >= 'a' && b <= 'z'));
    CHECK(ascii::IsLetter(c) == (ascii::IsUpper(c) || ascii::IsLower(c)));
  }
}

TEST_CASE("ascii runs: every byte value in every lane, after runs of each class", "[bpe][pretokenizer][ascii]") {
  // A 17-byte window: two full words and a tail byte. The probe byte b sits at lane i behind a run that is in every
  // class for the first i bytes ('a' for letter and lower, 'A' for upper), so each scanner stops exactly at the probe
  // when b is outside its class.
  for (char fill : {'a', 'A', 'z', 'Z'}) {
    for (int b = 0; b < 256; ++b) {
      for (size_t i = 0; i < 17; ++i) {
        std::string text(17, fill);
        text[i] = static_cast<char>(b);
        for (const Kernel& k : kKernels) {
          for (size_t n : {i + 1, size_t{8}, size_t{16}, size_t{17}}) {
            if (n > text.size()) continue;
            for (size_t pos : {size_t{0}, size_t{1}, i}) {
              if (pos > n) continue;
              INFO(k.name << " byte " << b << " lane " << i << " pos " << pos << " n " << n);
              REQUIRE(k.fast(text.data(), pos, n) == k.ref(text.data(), pos, n));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ascii runs: class boundaries and runs across words", "[bpe][pretokenizer][ascii]") {
  // The bytes on each side of every range, with and without bit 7 (a UTF-8 lead or continuation byte that matches
  // a letter in its low seven bits must not count), and the case bit flipped.
  const std::string edges = std::string("@AZ[`az{") + "\x7f\x80\xc1\xda\xe1\xfa\xff" + "\x01\x21\x5f\x7b";
  std::mt19937 rng(33);
  for (int trial = 0; trial < 400; ++trial) {
    std::string text;
    const size_t len = 1 + rng() % 40;
    while (text.size() < len) {
      // Mostly long runs of one class, broken by an edge byte.
      const int what = static_cast<int>(rng() % 4);
      const size_t run = rng() % 20;
      for (size_t j = 0; j < run; ++j)
        text += what == 0   ? char('a' + rng() % 26)
                : what == 1 ? char('A' + rng() % 26)
                : what == 2 ? (rng() % 2 ? 'q' : 'Q')
                            : edges[rng() % edges.size()];
      text += edges[rng() % edges.size()];
    }
    text.resize(len);
    CheckAll(text);
  }
}

TEST_CASE("ascii runs: random bytes", "[bpe][pretokenizer][ascii]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text(1 + rng() % 30, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : 'A' + rng() % 58);
    CheckAll(text);
  }
}

TEST_CASE("ascii runs: the byte classes agree with the Unicode class table", "[bpe][pretokenizer][ascii]") {
  for (uint32_t b = 0; b < 256; ++b) {
    INFO("byte " << b);
    const unsigned c = ascii::kByteClass[b];
    if (b >= 0x80) {
      CHECK(c == ascii::kNonAscii);
      continue;
    }
    const CharClass u = CharClassOf(b);
    CHECK((c == ascii::kLetter) == IsLetterClass(u));
    CHECK((c == ascii::kDigit) == (u == kClassNumber));
    CHECK((c == ascii::kSpace || c == ascii::kNewline) == (u == kClassSpace));
    CHECK((c == ascii::kNewline) == (b == '\r' || b == '\n'));
    CHECK((c == ascii::kSymbol) == (u == kClassOther || u == kClassMark));
  }
}
