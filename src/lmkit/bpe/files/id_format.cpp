#include "lmkit/bpe/files/id_format.h"

#include "lmkit/common/name_table.h"
#include "lmkit/common/utf8.h"

namespace lmkit::bpe {

Result<IdFormat> IdFormatFromName(std::string_view name) {
  if (const auto* e = FindByName(kIdFormatNames, name)) return e->format;
  return Status::InvalidArgument("unknown format '" + std::string(name) + "' (expected bin, npy, json or text)");
}

std::string_view IdFormatName(IdFormat f) { return NameOf(kIdFormatNames, &IdFormatEntry::format, f, "bin"); }

IdFormat IdFormatFromPath(const std::string& path) {
  auto ends = [&](std::string_view suf) {
    return path.size() >= suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends(".npy")) return IdFormat::kNpy;
  if (ends(".json")) return IdFormat::kJson;
  if (ends(".txt")) return IdFormat::kText;
  return IdFormat::kBin;
}

Result<IdDtype> IdDtypeFromName(std::string_view name) {
  if (const auto* e = FindByName(kIdDtypeNames, name)) return e->dtype;
  return Status::InvalidArgument("unknown dtype '" + std::string(name) + "' (expected auto, uint16 or uint32)");
}

std::string_view IdDtypeName(IdDtype d) { return NameOf(kIdDtypeNames, &IdDtypeEntry::dtype, d, "auto"); }

Result<IdDtype> ResolveDtype(IdDtype requested, const Tokenizer& tokenizer) {
  const bool fits16 = tokenizer.id_limit() <= 65536;
  if (requested == IdDtype::kAuto) return fits16 ? IdDtype::kU16 : IdDtype::kU32;
  if (requested == IdDtype::kU16 && !fits16)
    return Status::InvalidArgument(Field("dtype") + " uint16 cannot hold this tokenizer's ids (up to " +
                                   std::to_string(tokenizer.id_limit() - 1) + "); use uint32 or auto");
  return requested;
}

std::string QuoteTokenBytes(std::string_view b) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < b.size();) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A complete, well-formed UTF-8 sequence is kept; anything else is one \xNN.
    const DecodedChar d = DecodeUtf8At(b, i);
    const bool ok = d.cp != kInvalidCodePoint;
    const size_t len = d.len;
    if (ok) {
      out.append(b.substr(i, len));
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  out += '"';
  return out;
}

}  // namespace lmkit::bpe
