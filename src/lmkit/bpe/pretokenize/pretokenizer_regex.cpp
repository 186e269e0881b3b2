// See pretokenizer_regex.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lmkit/bpe/pretokenize/pretokenizer_regex.h"

#include <pcre2.h>

#include "lmkit/bpe/pretokenize/unicode_classes.h"

namespace lmkit::bpe {

struct RegexPretokenizer::Code {
  pcre2_code* re = nullptr;
  ~Code() {
    if (re != nullptr) pcre2_code_free(re);
  }
};

std::string Pcre2PatternFor(PretokPattern p) {
  static const std::string kWs = "\\t-\\r\\x{85}\\p{Z}";
  const std::string_view src = PatternRegex(p);
  std::string out;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src.compare(i, 4, "[^\\s") == 0) {
      out += "[^" + kWs;
      i += 3;
    } else if (src.compare(i, 2, "\\s") == 0) {
      out += "[" + kWs + "]";
      i += 1;
    } else if (src.compare(i, 2, "\\S") == 0) {
      out += "[^" + kWs + "]";
      i += 1;
    } else {
      out += src[i];
    }
  }
  return out;
}

Result<RegexPretokenizer> RegexPretokenizer::Create(PretokPattern pattern) {
  RegexPretokenizer r;
  r.pattern_ = Pcre2PatternFor(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  auto code = std::make_shared<Code>();
  code->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.pattern_.data()), r.pattern_.size(),
                           PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, nullptr);
  if (code->re == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status::Internal("PCRE2 cannot compile the " + std::string(PatternName(pattern)) +
                            " pattern: " + reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(code->re, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
  r.code_ = std::move(code);
  return r;
}

std::vector<size_t> RegexPretokenizer::Split(std::string_view text) const {
  // Make the text valid UTF-8 (invalid bytes -> U+FFFD) and remember where each character came from.
  std::string valid;
  std::vector<size_t> orig;  // orig[i] = offset in `text` of the character starting at valid[i]
  bool all_valid = true;
  for (size_t i = 0; i < text.size();) {
    const DecodedChar d = DecodeUtf8At(text, i);
    if (d.cp == kInvalidCodePoint) all_valid = false;
    i += d.len;
  }
  std::string_view subject = text;
  if (!all_valid) {
    valid.reserve(text.size() + 16);
    orig.reserve(text.size() + 16);
    for (size_t i = 0; i < text.size();) {
      const DecodedChar d = DecodeUtf8At(text, i);
      const size_t before = valid.size();
      if (d.cp == kInvalidCodePoint) {
        AppendUtf8(valid, 0xFFFD);
      } else {
        valid.append(text.substr(i, d.len));
      }
      orig.resize(valid.size(), i);
      (void)before;
      i += d.len;
    }
    orig.push_back(text.size());
    subject = valid;
  }
  std::vector<size_t> ends;
  pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  size_t pos = 0;
  while (pos < subject.size()) {
    const int rc = pcre2_match(code_->re, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), pos,
                               PCRE2_NO_UTF_CHECK, md, nullptr);
    size_t end;
    if (rc < 0) {
      end = subject.size();  // cannot happen: every character is matched by some alternative
    } else {
      end = pcre2_get_ovector_pointer(md)[1];
      if (end <= pos) end = subject.size();
    }
    ends.push_back(all_valid ? end : orig[end]);
    pos = end;
  }
  pcre2_match_data_free(md);
  return ends;
}

}  // namespace lmkit::bpe
