// See unicode_categories.h. Oniguruma's property names: its doc/UNICODE_PROPERTIES (general categories, short and
// long names, compared loosely as Unicode's UAX #44 LM3 says: case, whitespace, '_' and '-' ignored).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lmkit/bpe/pretokenize/unicode_categories.h"

#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "lmkit/common/utf8.h"

namespace lmkit::bpe {
namespace {

constexpr uint32_t Bit(GeneralCategory c) { return uint32_t{1} << c; }
constexpr uint32_t kL = Bit(kLu) | Bit(kLl) | Bit(kLt) | Bit(kLm) | Bit(kLo);
constexpr uint32_t kM = Bit(kMn) | Bit(kMc) | Bit(kMe);
constexpr uint32_t kN = Bit(kNd) | Bit(kNl) | Bit(kNo);
constexpr uint32_t kP = Bit(kPc) | Bit(kPd) | Bit(kPs) | Bit(kPe) | Bit(kPi) | Bit(kPf) | Bit(kPo);
constexpr uint32_t kS = Bit(kSm) | Bit(kSc) | Bit(kSk) | Bit(kSo);
constexpr uint32_t kZ = Bit(kZs) | Bit(kZl) | Bit(kZp);
constexpr uint32_t kC = Bit(kCc) | Bit(kCf) | Bit(kCs) | Bit(kCo) | Bit(kCn);

struct Name {
  const char* loose;  // lower case, no '_', '-' or spaces
  uint32_t mask;
  const char* pcre2;  // PCRE2's name for the same set, or null
};

constexpr Name kNames[] = {
    {"l", kL, "L"},
    {"letter", kL, "L"},
    {"lc", Bit(kLu) | Bit(kLl) | Bit(kLt), "L&"},
    {"l&", Bit(kLu) | Bit(kLl) | Bit(kLt), "L&"},
    {"casedletter", Bit(kLu) | Bit(kLl) | Bit(kLt), "L&"},
    {"lu", Bit(kLu), "Lu"},
    {"uppercaseletter", Bit(kLu), "Lu"},
    {"ll", Bit(kLl), "Ll"},
    {"lowercaseletter", Bit(kLl), "Ll"},
    {"lt", Bit(kLt), "Lt"},
    {"titlecaseletter", Bit(kLt), "Lt"},
    {"lm", Bit(kLm), "Lm"},
    {"modifierletter", Bit(kLm), "Lm"},
    {"lo", Bit(kLo), "Lo"},
    {"otherletter", Bit(kLo), "Lo"},
    {"m", kM, "M"},
    {"mark", kM, "M"},
    {"combiningmark", kM, "M"},
    {"mn", Bit(kMn), "Mn"},
    {"nonspacingmark", Bit(kMn), "Mn"},
    {"mc", Bit(kMc), "Mc"},
    {"spacingmark", Bit(kMc), "Mc"},
    {"me", Bit(kMe), "Me"},
    {"enclosingmark", Bit(kMe), "Me"},
    {"n", kN, "N"},
    {"number", kN, "N"},
    {"nd", Bit(kNd), "Nd"},
    {"decimalnumber", Bit(kNd), "Nd"},
    {"nl", Bit(kNl), "Nl"},
    {"letternumber", Bit(kNl), "Nl"},
    {"no", Bit(kNo), "No"},
    {"othernumber", Bit(kNo), "No"},
    {"p", kP, "P"},
    {"punctuation", kP, "P"},
    {"pc", Bit(kPc), "Pc"},
    {"connectorpunctuation", Bit(kPc), "Pc"},
    {"pd", Bit(kPd), "Pd"},
    {"dashpunctuation", Bit(kPd), "Pd"},
    {"ps", Bit(kPs), "Ps"},
    {"openpunctuation", Bit(kPs), "Ps"},
    {"pe", Bit(kPe), "Pe"},
    {"closepunctuation", Bit(kPe), "Pe"},
    {"pi", Bit(kPi), "Pi"},
    {"initialpunctuation", Bit(kPi), "Pi"},
    {"pf", Bit(kPf), "Pf"},
    {"finalpunctuation", Bit(kPf), "Pf"},
    {"po", Bit(kPo), "Po"},
    {"otherpunctuation", Bit(kPo), "Po"},
    {"s", kS, "S"},
    {"symbol", kS, "S"},
    {"sm", Bit(kSm), "Sm"},
    {"mathsymbol", Bit(kSm), "Sm"},
    {"sc", Bit(kSc), "Sc"},
    {"currencysymbol", Bit(kSc), "Sc"},
    {"sk", Bit(kSk), "Sk"},
    {"modifiersymbol", Bit(kSk), "Sk"},
    {"so", Bit(kSo), "So"},
    {"othersymbol", Bit(kSo), "So"},
    {"z", kZ, "Z"},
    {"separator", kZ, "Z"},
    {"zs", Bit(kZs), "Zs"},
    {"spaceseparator", Bit(kZs), "Zs"},
    {"zl", Bit(kZl), "Zl"},
    {"lineseparator", Bit(kZl), "Zl"},
    {"zp", Bit(kZp), "Zp"},
    {"paragraphseparator", Bit(kZp), "Zp"},
    {"c", kC, "C"},
    {"other", kC, "C"},
    {"cc", Bit(kCc), "Cc"},
    {"control", Bit(kCc), "Cc"},
    {"cf", Bit(kCf), "Cf"},
    {"format", Bit(kCf), "Cf"},
    {"cs", Bit(kCs), "Cs"},
    {"surrogate", Bit(kCs), "Cs"},
    {"co", Bit(kCo), "Co"},
    {"privateuse", Bit(kCo), "Co"},
    {"cn", Bit(kCn), "Cn"},
    {"unassigned", Bit(kCn), "Cn"},
};

const Name* FindName(std::string_view name) {
  std::string loose;
  for (char c : name)
    if (c != '_' && c != '-' && c != ' ')
      loose.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const Name& n : kNames)
    if (loose == n.loose) return &n;
  return nullptr;
}

void AppendRange(std::string* out, uint32_t a, uint32_t b) {
  char buf[32];
  if (a == b) {
    std::snprintf(buf, sizeof buf, "\\x{%X}", a);
  } else {
    std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", a, b);
  }
  *out += buf;
}

}  // namespace

GeneralCategory GeneralCategoryOf(uint32_t cp) {
  using unicode_detail::kCategoryRunCount;
  using unicode_detail::kCategoryRuns;
  if (cp >= 0x110000) return kCn;
  const auto* end = kCategoryRuns + kCategoryRunCount;
  const auto* it = std::upper_bound(kCategoryRuns, end, cp,
                                    [](uint32_t c, const unicode_detail::CategoryRun& r) { return c < r.first; });
  return static_cast<GeneralCategory>((it - 1)->category);
}

uint32_t CategoryMask(std::string_view name) {
  const Name* n = FindName(name);
  return n == nullptr ? 0 : n->mask;
}

std::vector<CodeRange> CategoryRanges(uint32_t mask, bool negate) {
  using unicode_detail::kCategoryRunCount;
  using unicode_detail::kCategoryRuns;
  std::vector<CodeRange> out;
  for (size_t i = 0; i < kCategoryRunCount; ++i) {
    const uint32_t a = kCategoryRuns[i].first;
    const uint32_t b = i + 1 < kCategoryRunCount ? kCategoryRuns[i + 1].first - 1 : 0x10FFFF;
    const bool in = ((mask >> kCategoryRuns[i].category) & 1u) != 0;
    if (in == negate) continue;
    uint32_t lo = a, hi = b;
    if (lo <= 0xDFFF && hi >= 0xD800) {
      if (lo < 0xD800) {
        if (!out.empty() && out.back().last + 1 == lo)
          out.back().last = 0xD7FF;
        else
          out.push_back({lo, 0xD7FF});
      }
      if (hi <= 0xDFFF) continue;
      lo = 0xE000;
    }
    if (!out.empty() && out.back().last + 1 == lo)
      out.back().last = hi;
    else
      out.push_back({lo, hi});
  }
  return out;
}

std::optional<std::string> PropertyClass(std::string_view name, bool negate, PcreUnicode mode) {
  const Name* n = FindName(name);
  if (n == nullptr) return std::nullopt;
  const uint32_t mask = n->mask;
  bool delta = mode == PcreUnicode::kFrom14To16 && !negate && (mask & Bit(kCn)) == 0;
  for (size_t i = 0; i < unicode_detail::kChangedSince14Count && delta; ++i) {
    const auto& c = unicode_detail::kChangedSince14[i];
    delta = (((mask >> c.category) & 1u) != 0) == (((mask >> GeneralCategoryOf(c.first)) & 1u) != 0);
  }
  std::string out;
  if (delta) {
    out = std::string("\\p{") + n->pcre2 + "}";
    for (size_t i = 0; i < unicode_detail::kNewSince14Count; ++i) {
      const CodeRange r = unicode_detail::kNewSince14[i];
      // A new range may hold several categories: add its runs in `mask`.
      uint32_t start = 0;
      bool open = false;
      for (uint32_t cp = r.first; cp <= r.last + 1; ++cp) {
        const bool in = cp <= r.last && ((mask >> GeneralCategoryOf(cp)) & 1u) != 0;
        if (in && !open) start = cp, open = true;
        if (!in && open) AppendRange(&out, start, cp - 1), open = false;
      }
    }
    return out;
  }
  for (const CodeRange& r : CategoryRanges(mask, negate)) AppendRange(&out, r.first, r.last);
  return out;
}

namespace {

// A bit per 256-code-point block holding a code point of kNewSince14 or kChangedSince14.
struct NewBlocks {
  uint64_t bits[0x1100 / 64] = {};
  NewBlocks() {
    auto mark = [&](uint32_t a, uint32_t b) {
      for (uint32_t blk = a >> 8; blk <= (b >> 8); ++blk) bits[blk >> 6] |= uint64_t{1} << (blk & 63);
    };
    for (size_t i = 0; i < unicode_detail::kNewSince14Count; ++i)
      mark(unicode_detail::kNewSince14[i].first, unicode_detail::kNewSince14[i].last);
    for (size_t i = 0; i < unicode_detail::kChangedSince14Count; ++i)
      mark(unicode_detail::kChangedSince14[i].first, unicode_detail::kChangedSince14[i].first);
  }
  bool Has(uint32_t cp) const { return ((bits[cp >> 14] >> ((cp >> 8) & 63)) & 1u) != 0; }
};

bool IsNewSince14(uint32_t cp) {
  using unicode_detail::kNewSince14;
  const auto* end = kNewSince14 + unicode_detail::kNewSince14Count;
  const auto* it = std::upper_bound(kNewSince14, end, cp, [](uint32_t c, const CodeRange& r) { return c < r.first; });
  if (it != kNewSince14 && cp <= (it - 1)->last) return true;
  for (size_t i = 0; i < unicode_detail::kChangedSince14Count; ++i)
    if (unicode_detail::kChangedSince14[i].first == cp) return true;
  return false;
}

}  // namespace

bool HasNewSince14(std::string_view text) {
  static const NewBlocks blocks;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    // Lead bytes below 0xE0 start code points below U+0800, none of them new (the first is U+0897).
    if (s[i] < 0xE0) {
      ++i;
      continue;
    }
    const DecodedChar d = DecodeUtf8At(text, i);
    if (d.cp != kInvalidCodePoint && blocks.Has(d.cp) && IsNewSince14(d.cp)) return true;
    i += d.len;
  }
  return false;
}

PcreUnicode LinkedPcreUnicode() {
  char version[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
  int major = 0, minor = 0;
  if (std::sscanf(version, "%d.%d", &major, &minor) != 2) return PcreUnicode::kUnused;
  return major >= 14 && major <= 16 ? PcreUnicode::kFrom14To16 : PcreUnicode::kUnused;
}

}  // namespace lmkit::bpe
