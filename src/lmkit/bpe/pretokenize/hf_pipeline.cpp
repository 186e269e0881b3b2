// See hf_pipeline.h. The rules follow Hugging Face tokenizers 0.23 (tokenizers/src/normalizers, pre_tokenizers and
// tokenizer/normalizer.rs: Pattern::find_matches and SplitDelimiterBehavior); tests/data/bpe/hf holds its ids for
// every step as goldens.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lmkit/bpe/pretokenize/hf_pipeline.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/bpe/pretokenize/unicode9_normalization.h"
#include "lmkit/bpe/pretokenize/unicode_categories.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"

namespace lmkit::bpe {
namespace {

pcre2_code* Pcre2Code(void* p) { return static_cast<pcre2_code*>(p); }

// Unicode 16.0's property `name` as a class body for the linked PCRE2 (unicode_categories.h); `name` is a general
// category.
std::string Property(std::string_view name) {
  static const PcreUnicode mode = LinkedPcreUnicode();
  return *PropertyClass(name, false, mode);
}

// Unicode White_Space (Oniguruma's \s) and Oniguruma's \w (Letter, Mark, Decimal_Number, Connector_Punctuation), by
// Unicode 16.0 or by PCRE2's own tables.
const std::string& WhiteSpaceClass(bool unicode16) {
  static const std::string s16 = "\\t-\\r\\x{85}" + Property("Z");
  static const std::string s = "\\t-\\r\\x{85}\\p{Z}";
  return unicode16 ? s16 : s;
}
const std::string& WordClass(bool unicode16) {
  static const std::string s16 = Property("L") + Property("M") + Property("Nd") + Property("Pc");
  static const std::string s = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
  return unicode16 ? s16 : s;
}

}  // namespace

bool IsUnicodeWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

Result<std::string> OnigToPcre2(std::string_view src, bool unicode16) {
  static const PcreUnicode mode = LinkedPcreUnicode();
  std::string out;
  bool in_class = false, negated = false;
  // Case-insensitive scopes: a property spelled as ranges would match the case variants of its members under (?i),
  // which \p{..} does not; there PCRE2's own \p{..} is kept.
  bool caseless = false;
  std::vector<bool> scopes;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (c == '\\' && i + 1 < src.size()) {
      const char e = src[i + 1];
      if ((e == 'p' || e == 'P') && i + 2 < src.size() && src[i + 2] == '{' && !caseless && unicode16) {
        const size_t close = src.find('}', i + 3);
        if (close != std::string_view::npos) {
          std::string_view name = src.substr(i + 3, close - (i + 3));
          bool neg = e == 'P';
          if (!name.empty() && name[0] == '^') neg = !neg, name.remove_prefix(1);
          // Outside a class a negation is [^...]; inside one it must be spelled as the complement's ranges.
          const std::optional<std::string> body = PropertyClass(name, neg && in_class, mode);
          if (body) {
            out += in_class ? *body : (neg ? "[^" : "[") + *body + "]";
            i = close;
            continue;
          }
        }
      }
      if (e == 's' || e == 'w' || e == 'S' || e == 'W') {
        const std::string_view set = (e == 's' || e == 'S') ? WhiteSpaceClass(unicode16) : WordClass(unicode16);
        const bool neg = (e == 'S' || e == 'W');
        if (!in_class) {
          out += neg ? "[^" : "[";
          out += set;
          out += "]";
        } else if (!neg) {
          out += set;
        } else {
          return Status::InvalidArgument(std::string("\\") + e + " inside [...] is not supported in regex " +
                                         std::string(src));
        }
        ++i;
        continue;
      }
      // Oniguruma's \uHHHH is PCRE2's \x{HHHH}.
      if (e == 'u' && i + 5 < src.size() && std::all_of(src.begin() + i + 2, src.begin() + i + 6, [](char h) {
            return std::isxdigit(static_cast<unsigned char>(h)) != 0;
          })) {
        out += "\\x{";
        out += src.substr(i + 2, 4);
        out += "}";
        i += 5;
        continue;
      }
      out += c;
      out += e;
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      negated = i + 1 < src.size() && src[i + 1] == '^';
      out += c;
      if (negated) out += src[++i];
      if (i + 1 < src.size() && src[i + 1] == ']') out += src[++i];  // a leading ']' is a literal
      continue;
    }
    if (in_class && c == ']') in_class = false;
    if (!in_class && c == '(') {
      scopes.push_back(caseless);
      if (i + 1 < src.size() && src[i + 1] == '?') {
        // (?flags) or (?flags:...): 'i' before a '-' turns case-insensitivity on, after it off.
        size_t k = i + 2;
        bool on = true, now = caseless;
        for (; k < src.size() && (std::isalpha(static_cast<unsigned char>(src[k])) != 0 || src[k] == '-'); ++k) {
          if (src[k] == '-') on = false;
          if (src[k] == 'i') now = on;
        }
        if (k < src.size() && k > i + 2 && src[k] == ')') {
          scopes.pop_back();  // (?i) holds to the end of the enclosing group
          caseless = now;
        } else if (k < src.size() && k > i + 2 && src[k] == ':') {
          caseless = now;
        }
      }
    } else if (!in_class && c == ')' && !scopes.empty()) {
      caseless = scopes.back();
      scopes.pop_back();
    }
    out += c;
  }
  (void)negated;
  return out;
}

namespace {

Result<pcre2_code*> CompilePcre2(const std::string& pattern, std::string_view onig_pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                 &err, &off, nullptr);
  if (re == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status::InvalidArgument("regex " + std::string(onig_pattern) + " does not compile (" +
                                   reinterpret_cast<const char*>(msg) + " at offset " + std::to_string(off) + ")");
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
  return re;
}

}  // namespace

// Performance note (debmix, Qwen2's regex, PCRE2 10.42 JIT, one thread): spelling \p{L} as [\p{L} + the 75 ranges
// new since 14.0] made matching 2.5x slower (0.12 s -> 0.30 s per 8 MB; explicit ranges alone 0.43 s): the JIT tests
// the ranges one by one for every character the property rejects. Text without such code points (nearly all) is
// matched by the pattern with PCRE2's own \p{..}, which gives the same matches there; scanning for them costs a
// look at each 3- and 4-byte character.
Result<std::shared_ptr<const HfRegex>> HfRegex::Compile(std::string_view onig_pattern) {
  LMKIT_ASSIGN_OR_RETURN(std::string pattern, OnigToPcre2(onig_pattern));
  std::shared_ptr<HfRegex> r(new HfRegex());
  LMKIT_ASSIGN_OR_RETURN(pcre2_code * re, CompilePcre2(pattern, onig_pattern));
  r->code_ = re;
  if (LinkedPcreUnicode() == PcreUnicode::kFrom14To16) {
    LMKIT_ASSIGN_OR_RETURN(std::string plain, OnigToPcre2(onig_pattern, false));
    if (plain != pattern) {
      LMKIT_ASSIGN_OR_RETURN(pcre2_code * fast, CompilePcre2(plain, onig_pattern));
      r->fast_ = fast;
    }
  }
  r->pattern_ = std::move(pattern);
  r->onig_ = std::string(onig_pattern);
  return std::shared_ptr<const HfRegex>(std::move(r));
}

void* HfRegex::CodeFor(std::string_view text) const { return fast_ != nullptr && !HasNewSince14(text) ? fast_ : code_; }

HfRegex::~HfRegex() {
  if (code_ != nullptr) pcre2_code_free(Pcre2Code(code_));
  if (fast_ != nullptr) pcre2_code_free(Pcre2Code(fast_));
}

namespace {

// One match data per thread, reused by every FindAll: only the whole match's offsets are read, and PCRE2 fills as many
// pairs as fit (it returns 0 instead of the group count when there are more), so one pair serves any pattern.
// Creating it per call cost a malloc and a free per word of every split step.
pcre2_match_data* ThreadMatchData() {
  struct Holder {
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(md); }
  };
  thread_local Holder h;
  return h.md;
}

}  // namespace

void HfRegex::FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const {
  out->clear();
  pcre2_match_data* md = ThreadMatchData();
  pcre2_code* code = Pcre2Code(CodeFor(text));
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc =
        pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    out->emplace_back(b, e);
    if (e > b) {
      pos = e;
    } else {
      if (b >= text.size()) break;
      pos = b + DecodeUtf8At(text, b).len;
    }
  }
}

bool HfRegex::Matches(std::string_view text) const {
  const int rc = pcre2_match(Pcre2Code(CodeFor(text)), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             PCRE2_NO_UTF_CHECK, ThreadMatchData(), nullptr);
  return rc >= 0;
}

namespace {

void Utf8ProcMap(std::string_view in, int options, std::string* out) {
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()), static_cast<utf8proc_ssize_t>(in.size()), &dst,
                   static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) {
    out->assign(in);  // not reached for valid UTF-8
  } else {
    out->assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  }
  std::free(dst);
}

// Hugging Face's normalization form (unicode9_normalization.h): utf8proc's between the code points that only
// Unicode versions after 9.0 normalize, which stay as they are.
void HfNormalForm(std::string_view in, int options, std::string* out) {
  size_t cut = std::string_view::npos;
  for (size_t i = 0; i < in.size();) {
    if (static_cast<unsigned char>(in[i]) < 0xDF) {  // below U+07C0: no later code point
      ++i;
      continue;
    }
    const DecodedChar d = DecodeUtf8At(in, i);
    if (IsLaterNormalizing(d.cp)) {
      cut = i;
      break;
    }
    i += d.len;
  }
  if (cut == std::string_view::npos) {
    Utf8ProcMap(in, options, out);
    return;
  }
  out->clear();
  std::string part;
  size_t seg = 0;
  for (size_t i = cut; i < in.size();) {
    const DecodedChar d = DecodeUtf8At(in, i);
    if (IsLaterNormalizing(d.cp)) {
      Utf8ProcMap(in.substr(seg, i - seg), options, &part);
      out->append(part);
      out->append(in.substr(i, d.len));
      seg = i + d.len;
    }
    i += d.len;
  }
  Utf8ProcMap(in.substr(seg), options, &part);
  out->append(part);
}

// Rust's char::to_lowercase per code point (Hugging Face's Lowercase; no final-sigma rule): utf8proc's simple
// mapping, plus U+0130 -> "i\u0307", the one full mapping that differs.
void Lowercase(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    const DecodedChar d = DecodeUtf8At(in, i);
    if (d.cp < 0x80) {
      out->push_back(static_cast<char>(d.cp >= 'A' && d.cp <= 'Z' ? d.cp + 32 : d.cp));
    } else if (d.cp == 0x130) {
      out->append("i\xCC\x87");
    } else {
      AppendUtf8(*out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(d.cp))));
    }
    i += d.len;
  }
}

void Strip(std::string_view in, bool left, bool right, std::string* out) {
  size_t b = 0, e = in.size();
  if (left)
    while (b < e) {
      const DecodedChar d = DecodeUtf8At(in, b);
      if (!IsUnicodeWhiteSpace(d.cp)) break;
      b += d.len;
    }
  if (right)
    while (e > b) {
      size_t k = e - 1;
      while (k > b && (static_cast<unsigned char>(in[k]) & 0xC0) == 0x80) --k;
      if (!IsUnicodeWhiteSpace(DecodeUtf8At(in, k).cp)) break;
      e = k;
    }
  out->assign(in.substr(b, e - b));
}

void ReplaceAll(std::string_view in, const NormalizerStep& s, std::string* out) {
  out->clear();
  if (s.regex) {
    std::vector<std::pair<size_t, size_t>> m;
    s.regex->FindAll(in, &m);
    size_t prev = 0;
    for (auto [b, e] : m) {
      out->append(in.substr(prev, b - prev));
      out->append(s.text);
      prev = e;
    }
    out->append(in.substr(prev));
    return;
  }
  if (s.literal.empty()) {
    out->assign(in);
    return;
  }
  size_t prev = 0;
  for (size_t at = in.find(s.literal); at != std::string_view::npos; at = in.find(s.literal, prev)) {
    out->append(in.substr(prev, at - prev));
    out->append(s.text);
    prev = at + s.literal.size();
  }
  out->append(in.substr(prev));
}

// Hugging Face's (offsets, is_match) list for one word, then the behavior's merge; appends the kept spans.
void SplitWord(std::string_view word, const std::vector<std::pair<size_t, size_t>>& matches, bool invert,
               SplitBehavior behavior, std::vector<std::pair<std::pair<size_t, size_t>, bool>>* spans) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) parts.push_back({{prev, b}, false});
    parts.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != word.size()) parts.push_back({{prev, word.size()}, false});
  if (invert)
    for (auto& p : parts) p.second = !p.second;
  spans->clear();
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (auto& p : parts)
        if (!p.second) spans->push_back({p.first, false});
      break;
    case SplitBehavior::kIsolated:
      for (auto& p : parts) spans->push_back({p.first, false});
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (auto& p : parts) {
        if (p.second && !previous_match && !spans->empty())
          spans->back().first.second = p.first.second;
        else
          spans->push_back({p.first, false});
        previous_match = p.second;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (size_t i = parts.size(); i-- > 0;) {
        auto& p = parts[i];
        if (p.second && !previous_match && !spans->empty())
          spans->back().first.first = p.first.first;
        else
          spans->push_back({p.first, false});
        previous_match = p.second;
      }
      std::reverse(spans->begin(), spans->end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (auto& p : parts) {
        if (p.second == previous_match && !spans->empty())
          spans->back().first.second = p.first.second;
        else
          spans->push_back({p.first, false});
        previous_match = p.second;
      }
      break;
    }
  }
}

// True when NFC leaves `text` as it is because every code point is one that NFC keeps and no neighbour changes:
// canonical combining class 0, NFC_Quick_Check Yes, and never the second part of a canonical composition (checked
// for these ranges against Unicode 16.0 with unicodedata2: U+0000-02FF, Cyrillic U+0400-0482 and U+048A-052F, kana
// U+3040-3096 and U+30A0-30FE, CJK U+4E00-9FFF, Hangul syllables). Most text is such, and utf8proc decomposes and
// recomposes every character.
bool NfcStable(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const DecodedChar d = DecodeUtf8At(text, i);
    const uint32_t cp = d.cp;
    const bool keep = cp < 0x300 || (cp >= 0x400 && cp <= 0x482) || (cp >= 0x48A && cp <= 0x52F) ||
                      (cp >= 0x3040 && cp <= 0x3096) || (cp >= 0x30A0 && cp <= 0x30FE) ||
                      (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3);
    if (!keep) return false;
    i += d.len;
  }
  return true;
}

}  // namespace

void Pipeline::Normalize(std::string_view text, std::string* out) const {
  std::string cur(text), next;
  for (const NormalizerStep& s : normalizer) {
    switch (s.kind) {
      case NormalizerStep::Kind::kNfc:
        if (NfcStable(cur)) continue;
        HfNormalForm(cur, UTF8PROC_COMPOSE, &next);
        break;
      case NormalizerStep::Kind::kNfd:
        HfNormalForm(cur, UTF8PROC_DECOMPOSE, &next);
        break;
      case NormalizerStep::Kind::kNfkc:
        HfNormalForm(cur, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &next);
        break;
      case NormalizerStep::Kind::kNfkd:
        HfNormalForm(cur, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, &next);
        break;
      case NormalizerStep::Kind::kLowercase:
        Lowercase(cur, &next);
        break;
      case NormalizerStep::Kind::kStrip:
        Strip(cur, s.left, s.right, &next);
        break;
      case NormalizerStep::Kind::kPrepend:
        next = cur.empty() ? cur : s.text + cur;
        break;
      case NormalizerStep::Kind::kReplace:
        ReplaceAll(cur, s, &next);
        break;
    }
    cur.swap(next);
  }
  *out = std::move(cur);
}

namespace {

// Rewrites every word of *p with conv(word, &new_buf).
template <typename Conv>
void Respan(PreTokenized* p, Conv conv) {
  std::string buf;
  buf.reserve(p->buf.size() * 2);
  for (PreTokenized::Word& w : p->words) {
    const size_t b = buf.size();
    conv(std::string_view(p->buf).substr(w.begin, w.end - w.begin), &buf);
    w.begin = static_cast<uint32_t>(b);
    w.end = static_cast<uint32_t>(buf.size());
  }
  p->buf.swap(buf);
}

}  // namespace

void Pipeline::PreTokenize(std::string_view text, bool at_start, PreTokenized* out) const {
  bool printable = false;
  out->buf.assign(text);
  out->words.clear();
  if (!text.empty()) out->words.push_back({0, static_cast<uint32_t>(text.size()), at_start});
  std::vector<PreTokenized::Word> words;
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> spans;
  std::string buf;
  for (const PreTokenizerStep& s : pre_tokenizer) {
    words.clear();
    const bool rewrites = s.kind == PreTokenizerStep::Kind::kMetaspace ||
                          (s.kind == PreTokenizerStep::Kind::kByteLevel && s.add_prefix_space);
    buf.clear();
    for (const PreTokenized::Word& w : out->words) {
      std::string_view word = std::string_view(out->buf).substr(w.begin, w.end - w.begin);
      size_t base = w.begin;
      if (rewrites) {
        base = buf.size();
        if (s.kind == PreTokenizerStep::Kind::kByteLevel) {
          if (word.empty() || word[0] != ' ') buf.push_back(' ');
          buf.append(word);
        } else {
          const std::string_view rep = s.replacement;
          const bool starts = word.substr(0, rep.size()) == rep || (!word.empty() && word[0] == ' ');
          if ((!starts && (s.prepend == PreTokenizerStep::Prepend::kAlways ||
                           (s.prepend == PreTokenizerStep::Prepend::kFirst && w.at_start))) ||
              (s.prepend == PreTokenizerStep::Prepend::kInputStart && w.at_start))
            buf.append(rep);
          for (char c : word) {
            if (c == ' ')
              buf.append(rep);
            else
              buf.push_back(c);
          }
        }
        word = std::string_view(buf).substr(base);
      }
      auto emit = [&](size_t b, size_t e) {
        if (e > b)
          words.push_back({static_cast<uint32_t>(base + b), static_cast<uint32_t>(base + e), w.at_start && b == 0});
      };
      switch (s.kind) {
        case PreTokenizerStep::Kind::kByteLevel:
          if (!s.use_regex) {
            emit(0, word.size());
            break;
          }
          [[fallthrough]];
        case PreTokenizerStep::Kind::kKnown: {
          const PretokPattern p = s.kind == PreTokenizerStep::Kind::kKnown ? s.known : PretokPattern::kGpt2;
          for (size_t pos = 0; pos < word.size();) {
            const size_t end = NextPretokenEnd(p, word, pos);
            emit(pos, end);
            pos = end;
          }
          break;
        }
        case PreTokenizerStep::Kind::kMetaspace:
          if (!s.split) {
            emit(0, word.size());
            break;
          }
          matches.clear();
          for (size_t at = word.find(s.replacement); at != std::string_view::npos;
               at = word.find(s.replacement, at + s.replacement.size()))
            matches.emplace_back(at, at + s.replacement.size());
          SplitWord(word, matches, false, SplitBehavior::kMergedWithNext, &spans);
          for (auto& sp : spans) emit(sp.first.first, sp.first.second);
          break;
        case PreTokenizerStep::Kind::kSplit:
          s.regex->FindAll(word, &matches);
          SplitWord(word, matches, s.invert, s.behavior, &spans);
          for (auto& sp : spans) emit(sp.first.first, sp.first.second);
          break;
      }
    }
    if (rewrites) out->buf.swap(buf);
    out->words.swap(words);
    // After ByteLevel the later steps see GPT-2's printable form of the bytes (Hugging Face converts there).
    if (s.to_printable && !printable && &s != &pre_tokenizer.back()) {
      Respan(out, [](std::string_view w, std::string* o) { AppendPrintable(*o, w); });
      printable = true;
    }
  }
  if (printable)
    Respan(out, [](std::string_view w, std::string* o) {
      std::string bytes;
      PrintableToBytesInto(w, &bytes);  // every word is whole printable characters
      o->append(bytes);
    });
}

namespace {

// Families' pre-tokenizer regexes (as their tokenizer.json files spell them) and what an Isolated split by each does
// at a cut "X\n|Y" (X printable non-space ASCII, Y an ASCII letter), in a word whose text before the cut ends with
// "\n" (and X, when the word holds it) and whose text after it starts with Y. kBoundary: every match ends before the
// cut or starts at or after it, and one ends exactly at it, so the words on each side are those of that side alone;
// kApart: no match holds the "\n" or Y and the scan's choices never look past them, so the two sides' matches are
// the whole's, though a gap may span the cut. Why, per regex: docs/bpe-encoding.md "Cutting pipelines".
enum class AtCut { kUnknown, kApart, kBoundary };

struct KnownRegex {
  const char* pattern;
  AtCut at_cut;
};

const KnownRegex kCutRegexes[] = {
    // Qwen2 / Qwen2.5 / Qwen3 (cl100k's with single digits).
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     AtCut::kBoundary},
    // Mistral's Tekken.
    {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     AtCut::kBoundary},
    // DeepSeek V3 (and R1, V2), its three splits in order.
    {R"(\p{N}{1,3})", AtCut::kApart},
    {"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", AtCut::kApart},
    {"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
     "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
     AtCut::kBoundary},
    // DeepSeek LLM's first split: every line break a word of its own.
    {"[\r\n]", AtCut::kBoundary},
};

AtCut RegexAtCut(const HfRegex& re) {
  for (const KnownRegex& k : kCutRegexes)
    if (re.onig_pattern() == k.pattern) return k.at_cut;
  return AtCut::kUnknown;
}

}  // namespace

bool Pipeline::newline_cut_safe() const {
  for (const NormalizerStep& n : normalizer) {
    using NK = NormalizerStep::Kind;
    if (n.kind != NK::kNfc && n.kind != NK::kNfd && n.kind != NK::kNfkc && n.kind != NK::kNfkd &&
        n.kind != NK::kLowercase)
      return false;
  }
  for (const PreTokenizerStep& s : pre_tokenizer) {
    switch (s.kind) {
      case PreTokenizerStep::Kind::kKnown:
        return true;  // rule N of cut_rules.h, proved for the three patterns
      case PreTokenizerStep::Kind::kByteLevel:
        if (s.add_prefix_space) return false;
        if (s.use_regex) return true;  // GPT-2's pattern
        break;                         // bytes to their printable form: words unchanged
      case PreTokenizerStep::Kind::kMetaspace:
        return false;
      case PreTokenizerStep::Kind::kSplit: {
        if (s.behavior != SplitBehavior::kIsolated || s.invert) return false;
        const AtCut a = RegexAtCut(*s.regex);
        if (a == AtCut::kUnknown) return false;
        if (a == AtCut::kBoundary) return true;
        break;
      }
    }
  }
  return false;  // no step puts a boundary at the cut (or no pre-tokenizer: the segment is one word)
}

bool Pipeline::special_end_cut_safe() const {
  for (const PreTokenizerStep& s : pre_tokenizer)
    if (s.kind == PreTokenizerStep::Kind::kMetaspace && s.prepend == PreTokenizerStep::Prepend::kFirst) return false;
  return true;
}

bool Pipeline::lossless() const {
  if (!normalizer.empty()) return false;
  for (const auto& s : pre_tokenizer) {
    if (s.kind == PreTokenizerStep::Kind::kMetaspace) return false;
    if (s.kind == PreTokenizerStep::Kind::kByteLevel && s.add_prefix_space) return false;
    if (s.kind == PreTokenizerStep::Kind::kSplit && s.behavior == SplitBehavior::kRemoved) return false;
  }
  return true;
}

}  // namespace lmkit::bpe
