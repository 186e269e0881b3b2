// See byte_unicode.h. The table is computed once (it is GPT-2's published construction, a few lines) and the UTF-8 of
// each mapped code point is cached so BytesToPrintable is a table copy per byte.
#include "lmkit/bpe/files/byte_unicode.h"

#include <fmt/format.h>

#include <array>

#include "lmkit/bpe/pretokenize/unicode_classes.h"

namespace lmkit::bpe {

namespace {

struct Tables {
  std::array<uint32_t, 256> cp{};
  std::array<std::array<char, 2>, 256> utf8{};  // every mapped code point is < U+0800: 1 or 2 bytes
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, 0x144> back{};  // code point -> byte, -1 when unmapped; mapped code points are < U+0144
};

const Tables& T() {
  static const Tables t = [] {
    Tables t;
    t.back.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) t.cp[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
    for (int b = 0; b < 256; ++b) {
      const uint32_t c = t.cp[b];
      if (c < 0x80) {
        t.utf8[b][0] = static_cast<char>(c);
        t.utf8_len[b] = 1;
      } else {
        t.utf8[b][0] = static_cast<char>(0xC0 | (c >> 6));
        t.utf8[b][1] = static_cast<char>(0x80 | (c & 0x3F));
        t.utf8_len[b] = 2;
      }
      t.back[t.cp[b]] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return t;
}

}  // namespace

uint32_t ByteToCodePoint(uint8_t b) { return T().cp[b]; }

int CodePointToByte(uint32_t cp) { return cp < T().back.size() ? T().back[cp] : -1; }

void AppendPrintable(std::string& out, std::string_view bytes) {
  const Tables& t = T();
  for (unsigned char b : bytes) out.append(t.utf8[b].data(), t.utf8_len[b]);
}

std::string BytesToPrintable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  AppendPrintable(out, bytes);
  return out;
}

bool PrintableToBytesInto(std::string_view printable, std::string* out) {
  out->clear();
  for (size_t i = 0; i < printable.size();) {
    const DecodedChar d = DecodeUtf8At(printable, i);
    const int b = d.cp == kInvalidCodePoint ? -1 : CodePointToByte(d.cp);
    if (b < 0) return false;
    out->push_back(static_cast<char>(b));
    i += d.len;
  }
  return true;
}

Result<std::string> PrintableToBytes(std::string_view printable) {
  std::string out;
  out.reserve(printable.size());
  for (size_t i = 0; i < printable.size();) {
    const DecodedChar d = DecodeUtf8At(printable, i);
    const int b = d.cp == kInvalidCodePoint ? -1 : CodePointToByte(d.cp);
    if (b < 0) {
      return Status::InvalidInput("", fmt::format("'{}' is not a byte-level token (the character at byte {} is outside "
                                                  "GPT-2's bytes_to_unicode table)",
                                                  printable, i));
    }
    out.push_back(static_cast<char>(b));
    i += d.len;
  }
  return out;
}

}  // namespace lmkit::bpe
