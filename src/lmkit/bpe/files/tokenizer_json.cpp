// Hugging Face tokenizer.json (BPE models) and GPT-2 vocab.json + merges.txt, read in time linear in the file:
// simdjson parses the document once; the vocabulary goes straight into the tokenizer's hash map and merges are
// looked up there by bytes. (nlohmann's ordered_json, which lmkit's Json is, finds keys by a linear scan, and a
// look-up per merge made loading quadratic: 3.4 s for a 30 k vocabulary, ~90 s for Llama 3's 128 k.) The small
// parts (normalizer, pre_tokenizer, decoder, post_processor, added_tokens) are re-read with nlohmann for clarity.
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"

namespace lmkit::bpe {
namespace {

namespace sj = simdjson;

Status ParseDom(const std::string& text, const std::string& path, sj::dom::parser& parser, sj::dom::element* root) {
  if (sj::error_code err = parser.parse(text.data(), text.size(), true).get(*root))
    return Status::InvalidInput(path, std::string("malformed JSON (") + sj::error_message(err) + ")");
  return Status::Ok();
}

std::string QuotedJson(std::string_view s) { return DumpJson(Json(std::string(s)), -1); }

// The id of vocabulary entry `key` (the message is built only on error: quoting every key was 12% of a load).
Result<uint32_t> DomId(sj::dom::element v, const std::string& path, std::string_view key) {
  uint64_t id = 0;
  if (v.get_uint64().get(id) || id >= 0x7FFFFFFFu)
    return Status::InvalidInput(path, "token " + QuotedJson(key) + ": id must be a non-negative integer");
  return static_cast<uint32_t>(id);
}

Result<std::string> StrField(const Json& obj, const char* key, const std::string& fallback, const std::string& path,
                             const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_string()) return Status::InvalidInput(path, where + " \"" + key + "\" must be a string");
  return obj[key].get<std::string>();
}
Result<bool> BoolField(const Json& obj, const char* key, bool fallback, const std::string& path,
                       const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_boolean()) return Status::InvalidInput(path, where + " \"" + key + "\" must be true or false");
  return obj[key].get<bool>();
}
// A pattern object {"String": s} or {"Regex": r}: the regex (a String is matched literally).
Result<std::string> PatternField(const Json& obj, const std::string& path, const std::string& where, bool* is_regex) {
  if (!obj.is_object() || !obj.contains("pattern") || !obj["pattern"].is_object())
    return Status::InvalidInput(path, where + " needs \"pattern\": {\"String\": ...} or {\"Regex\": ...}");
  const Json& p = obj["pattern"];
  if (p.contains("Regex") && p["Regex"].is_string()) {
    *is_regex = true;
    return p["Regex"].get<std::string>();
  }
  if (p.contains("String") && p["String"].is_string()) {
    *is_regex = false;
    return p["String"].get<std::string>();
  }
  return Status::InvalidInput(path, where + " \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
}

// A literal string as a regex matching it.
std::string EscapeRegex(std::string_view s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != ' ') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Result<std::shared_ptr<const HfRegex>> CompileRegex(const std::string& re, const std::string& path,
                                                    const std::string& where) {
  auto r = HfRegex::Compile(re);
  if (!r.ok()) return Status::Unsupported(path, where + ": " + r.status().message());
  return *r;
}

Status ParseNormalizer(const Json& n, const std::string& path, std::vector<NormalizerStep>* steps) {
  if (n.is_null()) return Status::Ok();
  if (!n.is_object()) return Status::InvalidInput(path, "\"normalizer\" and \"normalizers\" entries must be objects");
  LMKIT_ASSIGN_OR_RETURN(const std::string type, StrField(n, "type", "", path, "normalizer"));
  using K = NormalizerStep::Kind;
  NormalizerStep s;
  const std::string where = "normalizer " + type;
  if (type == "Sequence") {
    if (!n.contains("normalizers") || !n["normalizers"].is_array())
      return Status::InvalidInput(path, "normalizer Sequence needs a \"normalizers\" list");
    for (const Json& c : n["normalizers"]) LMKIT_RETURN_IF_ERROR(ParseNormalizer(c, path, steps));
    return Status::Ok();
  } else if (type == "NFC") {
    s.kind = K::kNfc;
  } else if (type == "NFD") {
    s.kind = K::kNfd;
  } else if (type == "NFKC") {
    s.kind = K::kNfkc;
  } else if (type == "NFKD") {
    s.kind = K::kNfkd;
  } else if (type == "Lowercase") {
    s.kind = K::kLowercase;
  } else if (type == "Strip") {
    s.kind = K::kStrip;
    LMKIT_ASSIGN_OR_RETURN(s.left, BoolField(n, "strip_left", true, path, where));
    LMKIT_ASSIGN_OR_RETURN(s.right, BoolField(n, "strip_right", true, path, where));
  } else if (type == "Prepend") {
    s.kind = K::kPrepend;
    LMKIT_ASSIGN_OR_RETURN(s.text, StrField(n, "prepend", "", path, where));
  } else if (type == "Replace") {
    s.kind = K::kReplace;
    bool is_regex = false;
    LMKIT_ASSIGN_OR_RETURN(std::string pat, PatternField(n, path, where, &is_regex));
    LMKIT_ASSIGN_OR_RETURN(s.text, StrField(n, "content", "", path, where));
    if (is_regex) {
      LMKIT_ASSIGN_OR_RETURN(s.regex, CompileRegex(pat, path, where));
    } else {
      s.literal = pat;
    }
  } else {
    return Status::Unsupported(path, "normalizer " + QuotedJson(type) +
                                         " is not implemented (lmkit has NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                                         "Prepend, Replace, Sequence)");
  }
  steps->push_back(std::move(s));
  return Status::Ok();
}

Result<SplitBehavior> ParseBehavior(const Json& p, const std::string& path, const std::string& where,
                                    SplitBehavior fallback) {
  LMKIT_ASSIGN_OR_RETURN(const std::string b, StrField(p, "behavior", "", path, where));
  if (b.empty()) return fallback;
  static const std::pair<const char*, SplitBehavior> kNames[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  for (const auto& [name, v] : kNames)
    if (b == name) return v;
  return Status::Unsupported(path, where + " behavior " + QuotedJson(b) + " is not one of Hugging Face's five");
}

// `byte_level` is set when a ByteLevel step is present (the vocabulary is then in GPT-2's byte form).
Status ParsePreTokenizer(const Json& p, const std::string& path, std::vector<PreTokenizerStep>* steps,
                         bool* byte_level) {
  if (p.is_null()) return Status::Ok();
  if (!p.is_object())
    return Status::InvalidInput(path, "\"pre_tokenizer\" and \"pretokenizers\" entries must be objects");
  LMKIT_ASSIGN_OR_RETURN(const std::string type, StrField(p, "type", "", path, "pre_tokenizer"));
  const std::string where = "pre_tokenizer " + type;
  using K = PreTokenizerStep::Kind;
  PreTokenizerStep s;
  auto regex_step = [&](const std::string& re, SplitBehavior behavior, bool invert) -> Status {
    s.kind = K::kSplit;
    s.behavior = behavior;
    s.invert = invert;
    LMKIT_ASSIGN_OR_RETURN(s.regex, CompileRegex(re, path, where));
    return Status::Ok();
  };
  if (type == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array())
      return Status::InvalidInput(path, "pre_tokenizer Sequence needs a \"pretokenizers\" list");
    for (const Json& c : p["pretokenizers"]) LMKIT_RETURN_IF_ERROR(ParsePreTokenizer(c, path, steps, byte_level));
    return Status::Ok();
  } else if (type == "ByteLevel") {
    *byte_level = true;
    s.kind = K::kByteLevel;
    s.to_printable = true;
    LMKIT_ASSIGN_OR_RETURN(s.add_prefix_space, BoolField(p, "add_prefix_space", true, path, where));
    LMKIT_ASSIGN_OR_RETURN(s.use_regex, BoolField(p, "use_regex", true, path, where));
    if (!s.add_prefix_space && s.use_regex) {
      s.kind = K::kKnown;
      s.known = PretokPattern::kGpt2;
    }
  } else if (type == "Split") {
    bool is_regex = false;
    LMKIT_ASSIGN_OR_RETURN(std::string pat, PatternField(p, path, where, &is_regex));
    LMKIT_ASSIGN_OR_RETURN(SplitBehavior behavior, ParseBehavior(p, path, where, SplitBehavior::kIsolated));
    LMKIT_ASSIGN_OR_RETURN(bool invert, BoolField(p, "invert", false, path, where));
    const auto known = is_regex ? detail::PatternFromRegex(pat) : std::nullopt;
    // Removed + invert keeps exactly the matches (OLMo 2's form); a known pattern matches every character, so that
    // is Isolated.
    const bool isolated = invert ? behavior == SplitBehavior::kRemoved : behavior == SplitBehavior::kIsolated;
    if (known && isolated) {
      s.kind = K::kKnown;
      s.known = *known;
    } else {
      LMKIT_RETURN_IF_ERROR(regex_step(is_regex ? pat : EscapeRegex(pat), behavior, invert));
    }
  } else if (type == "Digits") {
    LMKIT_ASSIGN_OR_RETURN(bool individual, BoolField(p, "individual_digits", false, path, where));
    LMKIT_RETURN_IF_ERROR(regex_step(individual ? "\\p{N}" : "\\p{N}+", SplitBehavior::kIsolated, false));
  } else if (type == "Punctuation") {
    LMKIT_ASSIGN_OR_RETURN(SplitBehavior behavior, ParseBehavior(p, path, where, SplitBehavior::kIsolated));
    LMKIT_RETURN_IF_ERROR(regex_step("[\\p{P}!-/:-@\\[-`{-~]", behavior, false));
  } else if (type == "Whitespace") {
    LMKIT_RETURN_IF_ERROR(regex_step("\\w+|[^\\w\\s]+", SplitBehavior::kRemoved, true));
  } else if (type == "WhitespaceSplit") {
    LMKIT_RETURN_IF_ERROR(regex_step("\\s", SplitBehavior::kRemoved, false));
  } else if (type == "Metaspace") {
    s.kind = K::kMetaspace;
    LMKIT_ASSIGN_OR_RETURN(s.replacement, StrField(p, "replacement", "\xE2\x96\x81", path, where));
    LMKIT_ASSIGN_OR_RETURN(s.split, BoolField(p, "split", true, path, where));
    LMKIT_ASSIGN_OR_RETURN(const std::string scheme, StrField(p, "prepend_scheme", "", path, where));
    if (scheme.empty()) {
      LMKIT_ASSIGN_OR_RETURN(bool add, BoolField(p, "add_prefix_space", true, path, where));
      s.prepend = add ? PreTokenizerStep::Prepend::kAlways : PreTokenizerStep::Prepend::kNever;
    } else if (scheme == "always") {
      s.prepend = PreTokenizerStep::Prepend::kAlways;
    } else if (scheme == "first") {
      s.prepend = PreTokenizerStep::Prepend::kFirst;
    } else if (scheme == "never") {
      s.prepend = PreTokenizerStep::Prepend::kNever;
    } else {
      return Status::Unsupported(path, where + " prepend_scheme " + QuotedJson(scheme) + " is not always/first/never");
    }
    if (s.replacement.empty()) return Status::InvalidInput(path, where + " \"replacement\" is empty");
  } else {
    return Status::Unsupported(path, "pre_tokenizer " + QuotedJson(type) +
                                         " is not implemented (lmkit has ByteLevel, Split, Digits, Punctuation, "
                                         "Whitespace, WhitespaceSplit, Metaspace, Sequence)");
  }
  steps->push_back(std::move(s));
  return Status::Ok();
}

// Decoders only change how ids turn back into text: one lmkit does not implement is reported when decoding.
void ParseDecoder(const Json& d, Tokenizer::DecodeRules* r) {
  if (!d.is_object()) return;
  const std::string type = d.contains("type") && d["type"].is_string() ? d["type"].get<std::string>() : "";
  if (type == "Sequence" && d.contains("decoders") && d["decoders"].is_array()) {
    for (const Json& c : d["decoders"]) ParseDecoder(c, r);
  } else if (type == "ByteFallback") {
    r->byte_fallback_decoder = true;
  } else if (type == "ByteLevel" || type == "Fuse") {
  } else if (type == "Replace" && d.contains("pattern") && d["pattern"].is_object() &&
             d["pattern"].contains("String") && d["pattern"]["String"].is_string() &&
             d.value("content", Json()) == Json(" ")) {
    r->metaspace = d["pattern"]["String"].get<std::string>();
  } else if (type == "Strip" && d.value("content", Json()) == Json(" ") && d.value("stop", Json(0)) == Json(0) &&
             d.contains("start") && d["start"].is_number_unsigned()) {
    r->strip_leading = d["start"].get<size_t>();
  } else if (type == "Metaspace") {
    r->metaspace = d.contains("replacement") && d["replacement"].is_string() ? d["replacement"].get<std::string>()
                                                                             : "\xE2\x96\x81";
    const bool never =
        d.value("prepend_scheme", Json()) == Json("never") || d.value("add_prefix_space", Json()) == Json(false);
    r->metaspace_drop_first = !never;
  } else {
    r->decode_error = "decoder " + QuotedJson(type) + " is not implemented";
  }
}

// TemplateProcessing's "single" (and Roberta/Bert processors): the ids before and after the sequence.
Status ParsePostProcessor(const Json& p, const std::string& path, std::vector<uint32_t>* prefix,
                          std::vector<uint32_t>* suffix, bool* has) {
  if (!p.is_object()) return Status::Ok();
  const std::string type = p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
  auto id_of = [&](const Json& pair) -> Result<uint32_t> {
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_unsigned())
      return Status::InvalidInput(path, "post_processor " + type + ": expected [token, id]");
    return pair[1].get<uint32_t>();
  };
  if (type == "Sequence" && p.contains("processors") && p["processors"].is_array()) {
    for (const Json& c : p["processors"]) LMKIT_RETURN_IF_ERROR(ParsePostProcessor(c, path, prefix, suffix, has));
  } else if (type == "ByteLevel") {
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    LMKIT_ASSIGN_OR_RETURN(uint32_t cls, id_of(p.value("cls", Json())));
    LMKIT_ASSIGN_OR_RETURN(uint32_t sep, id_of(p.value("sep", Json())));
    *prefix = {cls};
    *suffix = {sep};
    *has = true;
  } else if (type == "TemplateProcessing") {
    if (!p.contains("single") || !p["single"].is_array())
      return Status::InvalidInput(path, "post_processor TemplateProcessing needs a \"single\" list");
    const Json specials = p.value("special_tokens", Json::object());
    bool seen_sequence = false;
    prefix->clear();
    suffix->clear();
    for (const Json& piece : p["single"]) {
      if (piece.is_object() && piece.contains("Sequence")) {
        seen_sequence = true;
      } else if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].is_object()) {
        const Json& st = piece["SpecialToken"];
        const std::string name = st.contains("id") && st["id"].is_string() ? st["id"].get<std::string>() : "";
        if (!specials.is_object() || !specials.contains(name) || !specials[name].contains("ids") ||
            !specials[name]["ids"].is_array())
          return Status::InvalidInput(path, "post_processor TemplateProcessing: special token " + QuotedJson(name) +
                                                " is not in its \"special_tokens\"");
        for (const Json& id : specials[name]["ids"]) {
          if (!id.is_number_unsigned() || id.get<uint64_t>() > kMaxTokenId)
            return Status::InvalidInput(path, "post_processor TemplateProcessing: bad id for " + QuotedJson(name));
          (seen_sequence ? suffix : prefix)->push_back(id.get<uint32_t>());
        }
      } else {
        return Status::InvalidInput(path,
                                    "post_processor TemplateProcessing: \"single\" entries must be "
                                    "{\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
    }
    *has = true;
  } else {
    return Status::Unsupported(path, "post_processor " + QuotedJson(type) + " is not implemented");
  }
  return Status::Ok();
}

// "<0x41>" -> 0x41 (Hugging Face's byte-fallback token names); -1 otherwise.
int FallbackByte(std::string_view k) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (k.size() != 6 || k[0] != '<' || k[1] != '0' || k[2] != 'x' || k[5] != '>') return -1;
  const int hi = hex(k[3]), lo = hex(k[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// A merge's two parts, from "a b" or ["a", "b"].
Status MergeParts(sj::dom::element m, const std::string& where, std::string_view* a, std::string_view* b) {
  std::string_view s;
  if (!m.get_string().get(s)) {
    const size_t sp = s.find(' ');
    if (sp == std::string_view::npos || s.find(' ', sp + 1) != std::string_view::npos)
      return Status::InvalidInput(where, "expected \"a b\"");
    *a = s.substr(0, sp);
    *b = s.substr(sp + 1);
    return Status::Ok();
  }
  sj::dom::array arr;
  if (!m.get_array().get(arr) && arr.size() == 2 && !arr.at(0).get_string().get(*a) && !arr.at(1).get_string().get(*b))
    return Status::Ok();
  return Status::InvalidInput(where, "expected \"a b\" or [\"a\", \"b\"]");
}

// Adds the merge a + b -> ab, each part given as it is written in the file (`printable`: GPT-2's byte form).
Status AddMergeByText(Tokenizer& tok, std::string_view a, std::string_view b, bool printable, uint32_t rank,
                      const std::string& where, std::string* sa, std::string* sb) {
  if (printable) {
    if (!PrintableToBytesInto(a, sa) || !PrintableToBytesInto(b, sb)) {
      const std::string_view bad = PrintableToBytesInto(a, sa) ? b : a;
      return Status::InvalidInput(where, "token " + QuotedJson(bad) + " is not in the vocabulary");
    }
  } else {
    sa->assign(a);
    sb->assign(b);
  }
  const uint32_t left = tok.TokenId(*sa), right = tok.TokenId(*sb);
  if (left == kNoId) return Status::InvalidInput(where, "token " + QuotedJson(a) + " is not in the vocabulary");
  if (right == kNoId) return Status::InvalidInput(where, "token " + QuotedJson(b) + " is not in the vocabulary");
  // With a continuing_subword_prefix, a + b is a followed by b without its prefix (Hugging Face's BPE).
  const std::string& prefix = tok.subword_prefix();
  if (sb->compare(0, prefix.size(), prefix) != 0)
    return Status::InvalidInput(
        where, "token " + QuotedJson(b) + " does not start with continuing_subword_prefix " + QuotedJson(prefix));
  sa->append(*sb, prefix.size());
  const uint32_t result = tok.TokenId(*sa);
  if (result == kNoId)
    return Status::InvalidInput(where,
                                "token " + QuotedJson(std::string(a) + std::string(b)) + " is not in the vocabulary");
  return tok.AddMerge(left, right, rank, result).WithSubject(where);
}

// Whether `key` (a vocabulary entry, GPT-2 byte form) is stored raw instead: it is the content of the added token
// with its id, and not also an ordinary token spelled the same.
bool IsRawSpecial(std::string_view key, uint32_t id, const std::map<uint32_t, std::string>& added, std::string* bytes) {
  const auto it = added.find(id);
  if (it == added.end() || it->second != key) return false;
  return !PrintableToBytesInto(key, bytes) || *bytes != key;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> ReadVocabMerges(const std::string& vocab_json, const std::string& merges_txt,
                                                   const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(std::string vtext, ReadFileToString(vocab_json));
  sj::dom::parser parser;
  sj::dom::element root;
  LMKIT_RETURN_IF_ERROR(ParseDom(vtext, vocab_json, parser, &root));
  sj::dom::object vocab;
  if (root.get_object().get(vocab))
    return Status::InvalidInput(vocab_json, "vocabulary must be a JSON object {token: id}");
  // Specials stored raw, as Hugging Face's BPE model saves them (and lmkit writes them): an entry that is not in
  // byte-level form, or that spells a requested special whose printable form differs. They are the file's specials;
  // the requested ones are enabled.
  auto requested = [&](std::string_view text) {
    return std::find(options.specials.begin(), options.specials.end(), text) != options.specials.end();
  };
  auto tok = std::make_unique<Tokenizer>();
  tok->ReserveTokens(vocab.size());
  std::map<uint32_t, std::string> raw_specials;
  std::string bytes;
  for (auto [key, value] : vocab) {
    LMKIT_ASSIGN_OR_RETURN(uint32_t id, DomId(value, vocab_json, key));
    const bool printable = PrintableToBytesInto(key, &bytes);
    if (!printable || requested(key)) {
      raw_specials[id] = std::string(key);
      if (!printable || bytes != key) continue;
    }
    LMKIT_RETURN_IF_ERROR(tok->AddToken(bytes, id).WithSubject(vocab_json));
  }
  for (const auto& [id, text] : raw_specials) {
    if (PrintableToBytesInto(text, &bytes) && bytes == text) continue;  // also an ordinary token
    LMKIT_RETURN_IF_ERROR(tok->AddSpecial(text, id, requested(text)).WithSubject(vocab_json));
  }
  LMKIT_ASSIGN_OR_RETURN(std::string mtext, ReadFileToString(merges_txt));
  std::string_view text = mtext;
  size_t line_no = 0;
  uint32_t rank = 0;
  std::string sa, sb;
  while (!text.empty()) {
    const std::string_view line = detail::TakeLine(&text);
    ++line_no;
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    auto where = [&] { return merges_txt + ":" + std::to_string(line_no); };
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != line.npos)
      return Status::InvalidInput(where(), "expected two tokens separated by one space");
    Status st = AddMergeByText(*tok, line.substr(0, sp), line.substr(sp + 1), true, rank++, "", &sa, &sb);
    if (!st.ok()) return st.WithSubject(where());
  }
  tok->set_pattern(options.pattern.value_or(PretokPattern::kGpt2));
  tok->set_description("vocab.json + merges.txt " + vocab_json);
  LMKIT_RETURN_IF_ERROR(detail::FinishTokenizer(*tok, options, vocab_json));
  return tok;
}

Result<std::unique_ptr<Tokenizer>> ReadHfTokenizerJson(const std::string& path, const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  sj::dom::parser parser;
  sj::dom::element root;
  LMKIT_RETURN_IF_ERROR(ParseDom(text, path, parser, &root));
  sj::dom::object top, model;
  if (root.get_object().get(top)) return Status::InvalidInput(path, "not a tokenizer.json (no \"model\" object)");
  if (top["model"].get_object().get(model)) {
    sj::dom::object config;
    if (!top["config"].get_object().get(config)) return detail::TekkenFromDom(root, path, options);
    return Status::InvalidInput(path, "not a tokenizer.json (no \"model\" object)");
  }
  // The small parts, as nlohmann values.
  Json j = Json::object(), m = Json::object();
  for (auto [key, value] : top) {
    if (key == "model") continue;
    LMKIT_ASSIGN_OR_RETURN(j[std::string(key)], ParseJson(sj::minify(value), path));
  }
  sj::dom::element vocab_el, merges_el;
  bool has_vocab = false, has_merges = false;
  for (auto [key, value] : model) {
    if (key == "vocab") {
      vocab_el = value;
      has_vocab = true;
    } else if (key == "merges") {
      merges_el = value;
      has_merges = true;
    } else {
      LMKIT_ASSIGN_OR_RETURN(m[std::string(key)], ParseJson(sj::minify(value), path));
    }
  }
  LMKIT_ASSIGN_OR_RETURN(const std::string model_type, StrField(m, "type", "BPE", path, "model"));
  if (model_type != "BPE") return Status::Unsupported(path, "model type " + QuotedJson(model_type) + " is not BPE");
  if (!has_vocab || !has_merges) return Status::InvalidInput(path, "model needs \"vocab\" and \"merges\"");
  if (m.contains("dropout") && !m["dropout"].is_null() && !(m["dropout"].is_number() && m["dropout"] == 0))
    return Status::Unsupported(path, "model \"dropout\" is set: BPE dropout makes ids random");
  LMKIT_ASSIGN_OR_RETURN(std::string subword_prefix, StrField(m, "continuing_subword_prefix", "", path, "model"));
  LMKIT_ASSIGN_OR_RETURN(std::string word_suffix, StrField(m, "end_of_word_suffix", "", path, "model"));
  LMKIT_ASSIGN_OR_RETURN(const bool byte_fallback, BoolField(m, "byte_fallback", false, path, "model"));
  LMKIT_ASSIGN_OR_RETURN(const bool fuse_unk, BoolField(m, "fuse_unk", false, path, "model"));
  LMKIT_ASSIGN_OR_RETURN(const bool ignore_merges, BoolField(m, "ignore_merges", false, path, "model"));
  LMKIT_ASSIGN_OR_RETURN(const std::string unk_token, StrField(m, "unk_token", "", path, "model"));

  auto pipeline = std::make_shared<Pipeline>();
  LMKIT_RETURN_IF_ERROR(ParseNormalizer(j.value("normalizer", Json()), path, &pipeline->normalizer));
  bool byte_level = false;
  LMKIT_RETURN_IF_ERROR(
      ParsePreTokenizer(j.value("pre_tokenizer", Json()), path, &pipeline->pre_tokenizer, &byte_level));
  const Json decoder = j.value("decoder", Json());
  if (decoder.is_object() && decoder.value("type", Json()) == Json("ByteLevel")) byte_level = true;
  // A final ByteLevel without regex or prefix space only maps bytes to the printable form the vocabulary is in.
  auto& steps = pipeline->pre_tokenizer;
  while (!steps.empty() && steps.back().kind == PreTokenizerStep::Kind::kByteLevel && !steps.back().use_regex &&
         !steps.back().add_prefix_space)
    steps.pop_back();
  if (options.pattern) {
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::kKnown;
    s.known = *options.pattern;
    pipeline->pre_tokenizer = {s};
  }
  Tokenizer::DecodeRules decode_rules;
  ParseDecoder(decoder, &decode_rules);
  decode_rules.fallback_as_text = !byte_level && byte_fallback && !decode_rules.byte_fallback_decoder;
  std::vector<uint32_t> prefix, suffix;
  bool has_template = false;
  LMKIT_RETURN_IF_ERROR(ParsePostProcessor(j.value("post_processor", Json()), path, &prefix, &suffix, &has_template));

  // A present added_tokens that is not a list (null aside) is refused: ignoring it would drop the special tokens.
  const Json added_json = j.value("added_tokens", Json());
  if (!added_json.is_array() && !added_json.is_null())
    return Status::InvalidInput(path, "\"added_tokens\" is not a list");
  struct Added {
    std::string text;
    uint32_t id;
    Tokenizer::AddedFlags flags;
  };
  std::vector<Added> added;
  std::map<uint32_t, std::string> added_by_id;
  for (const Json& a : added_json.is_array() ? added_json : Json::array()) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id") ||
        !a["id"].is_number_unsigned() || a["id"].get<uint64_t>() >= 0x7FFFFFFFu)
      return Status::InvalidInput(path, "added_tokens entries need \"id\" (a non-negative integer) and \"content\"");
    Added e{a["content"].get<std::string>(), a["id"].get<uint32_t>(), {}};
    const std::string where = "added token " + QuotedJson(e.text);
    LMKIT_ASSIGN_OR_RETURN(e.flags.lstrip, BoolField(a, "lstrip", false, path, where));
    LMKIT_ASSIGN_OR_RETURN(e.flags.rstrip, BoolField(a, "rstrip", false, path, where));
    LMKIT_ASSIGN_OR_RETURN(e.flags.single_word, BoolField(a, "single_word", false, path, where));
    LMKIT_ASSIGN_OR_RETURN(const bool special, BoolField(a, "special", false, path, where));
    LMKIT_ASSIGN_OR_RETURN(const bool normalized, BoolField(a, "normalized", !special, path, where));
    // Hugging Face finds a normalized added token in the normalized text; lmkit finds every added token in the raw
    // text, which is the same when the normalizer leaves the token as it is.
    if (normalized && pipeline->has_normalizer()) {
      std::string n;
      pipeline->Normalize(e.text, &n);
      if (n != e.text)
        return Status::Unsupported(path, where +
                                             " is \"normalized\" and the normalizer changes it; lmkit matches "
                                             "added tokens in the text before normalization");
    }
    added_by_id.emplace(e.id, e.text);
    added.push_back(std::move(e));
  }

  auto tok = std::make_unique<Tokenizer>();
  sj::dom::object vocab;
  if (vocab_el.get_object().get(vocab))
    return Status::InvalidInput(path, "vocabulary must be a JSON object {token: id}");
  tok->ReserveTokens(vocab.size());
  uint32_t unk = kNoId;
  if (!byte_level) tok->set_char_level(byte_fallback, kNoId, fuse_unk);
  std::string bytes;
  for (auto [key, value] : vocab) {
    LMKIT_ASSIGN_OR_RETURN(uint32_t id, DomId(value, path, key));
    if (!unk_token.empty() && key == unk_token) unk = id;
    if (byte_level) {
      if (IsRawSpecial(key, id, added_by_id, &bytes)) continue;
      if (!PrintableToBytesInto(key, &bytes))
        return Status::InvalidInput(path, "token " + QuotedJson(key) + " is not in GPT-2's byte-level form");
      LMKIT_RETURN_IF_ERROR(tok->AddToken(bytes, id).WithSubject(path));
    } else if (const int b = byte_fallback ? FallbackByte(key) : -1; b >= 0) {
      LMKIT_RETURN_IF_ERROR(tok->AddByteFallback(static_cast<uint8_t>(b), id).WithSubject(path));
    } else {
      LMKIT_RETURN_IF_ERROR(tok->AddToken(key, id).WithSubject(path));
    }
  }
  if (!unk_token.empty() && unk == kNoId)
    return Status::InvalidInput(path, "model \"unk_token\" " + QuotedJson(unk_token) + " is not in the vocabulary");
  if (!byte_level) tok->set_char_level(byte_fallback, unk, fuse_unk);
  if (!subword_prefix.empty() || !word_suffix.empty()) {
    // A byte-level vocabulary spells them in GPT-2's printable form, as its tokens.
    std::string pb = subword_prefix, sb = word_suffix;
    if (byte_level && (!PrintableToBytesInto(subword_prefix, &pb) || !PrintableToBytesInto(word_suffix, &sb)))
      return Status::InvalidInput(path,
                                  "model continuing_subword_prefix / end_of_word_suffix is not in GPT-2's "
                                  "byte-level form");
    tok->set_subword_affixes(std::move(pb), std::move(sb), unk, fuse_unk);
  }

  sj::dom::array merges;
  if (merges_el.get_array().get(merges)) return Status::InvalidInput(path, "\"merges\" must be a list");
  // Merges go in blocks: a block's parts are converted and hashed and their table slots prefetched before any is
  // looked up, so that the cache misses of the three look-ups per merge overlap (Llama 3: 280 k merges into a 10 MB
  // table). A merge that fails a look-up is redone by AddMergeByText, which says what is wrong.
  tok->ReserveMerges(merges.size());
  struct Pending {
    std::string_view a, b;
    std::string left, right, joined;
    uint64_t hl = 0, hr = 0, hj = 0;
    bool ok = false;
  };
  constexpr size_t kBlock = 16;
  std::vector<Pending> block(kBlock);
  size_t fill = 0;
  uint32_t rank = 0;
  std::string sa, sb;
  const std::string& sub_prefix = tok->subword_prefix();
  auto flush = [&]() -> Status {
    for (size_t i = 0; i < fill; ++i, ++rank) {
      const Pending& p = block[i];
      const uint32_t left = p.ok ? tok->TokenIdHashed(p.left, p.hl) : kNoId;
      const uint32_t right = p.ok ? tok->TokenIdHashed(p.right, p.hr) : kNoId;
      const uint32_t result = p.ok ? tok->TokenIdHashed(p.joined, p.hj) : kNoId;
      Status st = left != kNoId && right != kNoId && result != kNoId
                      ? tok->AddMerge(left, right, rank, result)
                      : AddMergeByText(*tok, p.a, p.b, byte_level, rank, "", &sa, &sb);
      if (!st.ok()) return st.WithSubject(path + ": merge " + std::to_string(rank));
    }
    fill = 0;
    return Status::Ok();
  };
  for (sj::dom::element me : merges) {
    Pending& p = block[fill];
    if (Status st = MergeParts(me, "", &p.a, &p.b); !st.ok()) {
      LMKIT_RETURN_IF_ERROR(flush());  // the merges before it first, in order
      return st.WithSubject(path + ": merge " + std::to_string(rank));
    }
    if (byte_level) {
      p.ok = PrintableToBytesInto(p.a, &p.left) && PrintableToBytesInto(p.b, &p.right);
    } else {
      p.left.assign(p.a);
      p.right.assign(p.b);
      p.ok = true;
    }
    p.ok = p.ok && p.right.compare(0, sub_prefix.size(), sub_prefix) == 0;
    if (p.ok) {
      p.joined.assign(p.left);
      p.joined.append(p.right, sub_prefix.size());
      p.hl = detail::HashBytes(p.left.data(), p.left.size());
      p.hr = detail::HashBytes(p.right.data(), p.right.size());
      p.hj = detail::HashBytes(p.joined.data(), p.joined.size());
      tok->PrefetchToken(p.hl);
      tok->PrefetchToken(p.hr);
      tok->PrefetchToken(p.hj);
    }
    if (++fill == kBlock) LMKIT_RETURN_IF_ERROR(flush());
  }
  LMKIT_RETURN_IF_ERROR(flush());
  for (auto& a : added) {
    LMKIT_RETURN_IF_ERROR(tok->AddSpecial(a.text, a.id, true).WithSubject(path));
    tok->set_added_flags(a.id, a.flags);
  }
  tok->set_whole_piece_shortcut(ignore_merges);
  // The hand-written scanner when the pipeline is one of its patterns alone (GPT-2, Llama 3, OLMo 2).
  if (!pipeline->has_normalizer() && !tok->has_affixes() && pipeline->pre_tokenizer.size() == 1 &&
      pipeline->pre_tokenizer[0].kind == PreTokenizerStep::Kind::kKnown) {
    tok->set_pattern(pipeline->pre_tokenizer[0].known);
  } else {
    tok->set_pipeline(std::move(pipeline));
  }
  tok->set_decode_rules(std::move(decode_rules));
  if (has_template) tok->set_template(std::move(prefix), std::move(suffix));
  tok->set_description("tokenizer.json " + path);
  LMKIT_RETURN_IF_ERROR(detail::FinishTokenizer(*tok, options, path));
  return tok;
}

}  // namespace lmkit::bpe
