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
#include "lmkit/bpe/pretokenize/unicode_classes.h"

namespace lmkit::bpe {
namespace {

pcre2_code* Pcre2Code(void* p) { return static_cast<pcre2_code*>(p); }

constexpr std::string_view kWs = "\\t-\\r\\x{85}\\p{Z}";          // Unicode White_Space (Oniguruma's \s)
constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";  // Oniguruma's \w

}  // namespace

bool IsUnicodeWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

Result<std::string> OnigToPcre2(std::string_view src) {
  std::string out;
  bool in_class = false, negated = false;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (c == '\\' && i + 1 < src.size()) {
      const char e = src[i + 1];
      if (e == 's' || e == 'w' || e == 'S' || e == 'W') {
        const std::string_view set = (e == 's' || e == 'S') ? kWs : kWord;
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
    out += c;
  }
  (void)negated;
  return out;
}

Result<std::shared_ptr<const HfRegex>> HfRegex::Compile(std::string_view onig_pattern) {
  LMKIT_ASSIGN_OR_RETURN(std::string pattern, OnigToPcre2(onig_pattern));
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
  std::shared_ptr<HfRegex> r(new HfRegex());
  r->pattern_ = std::move(pattern);
  r->code_ = re;
  return std::shared_ptr<const HfRegex>(std::move(r));
}

HfRegex::~HfRegex() {
  if (code_ != nullptr) pcre2_code_free(Pcre2Code(code_));
}

void HfRegex::FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const {
  out->clear();
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(Pcre2Code(code_), nullptr);
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(Pcre2Code(code_), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                               PCRE2_NO_UTF_CHECK, md, nullptr);
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
  pcre2_match_data_free(md);
}

bool HfRegex::Matches(std::string_view text) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(Pcre2Code(code_), nullptr);
  const int rc = pcre2_match(Pcre2Code(code_), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             PCRE2_NO_UTF_CHECK, md, nullptr);
  pcre2_match_data_free(md);
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

}  // namespace

void Pipeline::Normalize(std::string_view text, std::string* out) const {
  std::string cur(text), next;
  for (const NormalizerStep& s : normalizer) {
    switch (s.kind) {
      case NormalizerStep::Kind::kNfc:
        Utf8ProcMap(cur, UTF8PROC_COMPOSE, &next);
        break;
      case NormalizerStep::Kind::kNfd:
        Utf8ProcMap(cur, UTF8PROC_DECOMPOSE, &next);
        break;
      case NormalizerStep::Kind::kNfkc:
        Utf8ProcMap(cur, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &next);
        break;
      case NormalizerStep::Kind::kNfkd:
        Utf8ProcMap(cur, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, &next);
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
