#include "lmkit/bpe/tokenizer_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "lmkit/bpe/byte_unicode.h"
#include "lmkit/common/data_dir.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/common/mapped_file.h"

namespace lmkit::bpe {
namespace {

const char* const kBuiltins[] = {"gpt2", "cl100k_base", "o200k_base"};

bool IsDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool IsFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
std::string BaseName(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The known pattern whose regex is exactly `re`, if any.
std::optional<PretokPattern> PatternFromRegex(std::string_view re) {
  for (PretokPattern p : {PretokPattern::kGpt2, PretokPattern::kCl100k, PretokPattern::kO200k})
    if (PatternRegex(p) == re) return p;
  return std::nullopt;
}

std::optional<PretokPattern> PatternFromStem(const std::string& file) {
  std::string b = BaseName(file);
  if (b.rfind("gpt2", 0) == 0 || b.rfind("r50k", 0) == 0) return PretokPattern::kGpt2;
  if (b.rfind("cl100k", 0) == 0) return PretokPattern::kCl100k;
  if (b.rfind("o200k", 0) == 0) return PretokPattern::kO200k;
  return std::nullopt;
}

Status FinishWith(Tokenizer& tok, const TokenizerOptions& options, const std::string& subject) {
  for (const auto& s : options.specials) {
    Status st = tok.EnableSpecial(s);
    if (!st.ok())
      return Status::NotFound(s, Field("special_token") + " is not a special token or a token of " + subject);
  }
  return tok.Finish().WithSubject(subject);
}

int Base64Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    int v = Base64Value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return bits < 6;  // leftover bits must be padding
}

Status ParseU32(std::string_view s, uint32_t* v) {
  if (s.empty() || s.size() > 10) return Status::InvalidInput("", "bad number");
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return Status::InvalidInput("", "bad number");
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  if (x >= 0x7FFFFFFFu) return Status::InvalidInput("", "number too large");
  *v = static_cast<uint32_t>(x);
  return Status::Ok();
}

Result<uint32_t> JsonId(const Json& v, const std::string& path, const std::string& what) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() >= 0x7FFFFFFFu)
    return Status::InvalidInput(path, what + ": id must be a non-negative integer");
  return v.get<uint32_t>();
}

// Reads `<stem>.json` next to a rank file (lmkit's data/tokenizers format, a superset of tiktoken's own
// `{pat_str, special_tokens}`): its pattern and special tokens.
Status ReadTiktokenMetadata(const std::string& path, Tokenizer& tok, std::optional<PretokPattern>* pattern) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, path));
  if (!j.is_object()) return Status::InvalidInput(path, "expected a JSON object");
  if (j.contains("pattern") && j["pattern"].is_string()) {
    auto p = PatternFromName(j["pattern"].get<std::string>());
    if (!p.ok()) return Status::InvalidInput(path, "unknown \"pattern\" " + DumpJson(j["pattern"], -1));
    *pattern = *p;
  } else if (j.contains("pat_str") && j["pat_str"].is_string()) {
    *pattern = PatternFromRegex(j["pat_str"].get<std::string>());
    if (!pattern->has_value())
      return Status::Unsupported(path, "\"pat_str\" is not one of the gpt2/cl100k/o200k patterns lmkit implements");
  }
  if (j.contains("special_tokens")) {
    if (!j["special_tokens"].is_object()) return Status::InvalidInput(path, "\"special_tokens\" must be an object");
    for (auto it = j["special_tokens"].begin(); it != j["special_tokens"].end(); ++it) {
      LMKIT_ASSIGN_OR_RETURN(uint32_t id, JsonId(it.value(), path, "special token " + it.key()));
      LMKIT_RETURN_IF_ERROR(tok.AddSpecial(it.key(), id, true).WithSubject(path));
    }
  }
  return Status::Ok();
}

// obj[key] as a string (bool), `fallback` when obj is not an object or lacks the key; a value of another type is an
// error naming the key. (nlohmann's value() would throw on a wrong type.)
Result<std::string> StrField(const Json& obj, const char* key, const std::string& fallback, const std::string& path) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_string()) return Status::InvalidInput(path, std::string("\"") + key + "\" must be a string");
  return obj[key].get<std::string>();
}
Result<bool> BoolField(const Json& obj, const char* key, bool fallback, const std::string& path) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_boolean()) return Status::InvalidInput(path, std::string("\"") + key + "\" must be true or false");
  return obj[key].get<bool>();
}

// Fills `tok` from a {printable token: id} object (vocab.json, tokenizer.json's model.vocab). An entry whose key is the
// raw content of the added token with its id (`added`: id -> content) is that special token, stored as Hugging Face
// stores specials, and is left to the caller; where the raw and the printable form coincide ("<|endoftext|>") the
// entry is an ordinary token as well, as before.
Status AddPrintableVocab(const Json& vocab, const std::string& path, Tokenizer& tok,
                         const std::map<uint32_t, std::string>& added = {}) {
  if (!vocab.is_object()) return Status::InvalidInput(path, "vocabulary must be a JSON object {token: id}");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    LMKIT_ASSIGN_OR_RETURN(uint32_t id, JsonId(it.value(), path, "token " + it.key()));
    auto bytes = PrintableToBytes(it.key());
    const auto special = added.find(id);
    if (special != added.end() && special->second == it.key() && (!bytes.ok() || *bytes != it.key())) continue;
    if (!bytes.ok())
      return Status::InvalidInput(path, "token " + DumpJson(it.key(), -1) + " is not in GPT-2's byte-level form");
    LMKIT_RETURN_IF_ERROR(tok.AddToken(*bytes, id).WithSubject(path));
  }
  return Status::Ok();
}

// One merge rule given as two printable tokens.
Status AddPrintableMerge(const Json& vocab, std::string_view a, std::string_view b, uint32_t rank,
                         const std::string& where, Tokenizer& tok) {
  auto find = [&](const std::string& key) -> Result<uint32_t> {
    auto it = vocab.find(key);
    // DumpJson, not Json::dump, which throws on the invalid UTF-8 a merges.txt line may hold.
    if (it == vocab.end())
      return Status::InvalidInput(where, "token " + DumpJson(key, -1) + " is not in the vocabulary");
    return it->get<uint32_t>();
  };
  LMKIT_ASSIGN_OR_RETURN(uint32_t left, find(std::string(a)));
  LMKIT_ASSIGN_OR_RETURN(uint32_t right, find(std::string(b)));
  LMKIT_ASSIGN_OR_RETURN(uint32_t result, find(std::string(a) + std::string(b)));
  return tok.AddMerge(left, right, rank, result).WithSubject(where);
}

// Removes the first line from *text and returns it without its "\n" or "\r\n" (rank and merges files come from
// Windows checkouts too).
std::string_view TakeLine(std::string_view* text) {
  const size_t nl = text->find('\n');
  std::string_view line = text->substr(0, nl);
  text->remove_prefix(nl == std::string_view::npos ? text->size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

std::vector<std::string> BuiltinTokenizerNames() { return {std::begin(kBuiltins), std::end(kBuiltins)}; }

Result<std::unique_ptr<Tokenizer>> ReadTiktoken(const std::string& path, const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto tok = std::make_unique<Tokenizer>();
  std::string_view text = file.view();
  tok->ReserveTokens(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::string bytes;
  size_t line_no = 0;
  while (!text.empty()) {
    const std::string_view line = TakeLine(&text);
    ++line_no;
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    // The "file:line" subject is built only for an error: built for every line, its strings were ~5% of the
    // instructions of `bpe encode -t gpt2` on 8 MB (callgrind), and o200k has four times gpt2's lines.
    auto where = [&] { return path + ":" + std::to_string(line_no); };
    if (sp == std::string_view::npos) return Status::InvalidInput(where(), "expected 'base64-token rank'");
    uint32_t rank = 0;
    if (!ParseU32(line.substr(sp + 1), &rank).ok())
      return Status::InvalidInput(where(), "rank is not a non-negative integer");
    if (!DecodeBase64(line.substr(0, sp), &bytes)) return Status::InvalidInput(where(), "token is not valid base64");
    if (Status st = tok->AddToken(bytes, rank); !st.ok()) return st.WithSubject(where());
  }
  tok->AddAllSplitsAsMerges();
  tok->set_whole_piece_shortcut(true);

  std::optional<PretokPattern> pattern = PatternFromStem(path);
  std::string meta = EndsWith(path, ".tiktoken") ? path.substr(0, path.size() - 9) + ".json" : "";
  if (!meta.empty() && IsFile(meta)) LMKIT_RETURN_IF_ERROR(ReadTiktokenMetadata(meta, *tok, &pattern));
  if (options.pattern) pattern = options.pattern;
  if (!pattern)
    return Status::InvalidArgument("cannot tell the pre-tokenization pattern of " + path + "; pass " +
                                   Field("pattern") +
                                   " gpt2|cl100k|o200k (or put a <name>.json with \"pattern\" beside it)");
  tok->set_pattern(*pattern);
  tok->set_description("tiktoken ranks " + path);
  LMKIT_RETURN_IF_ERROR(FinishWith(*tok, options, path));
  return tok;
}

Result<std::unique_ptr<Tokenizer>> ReadVocabMerges(const std::string& vocab_json, const std::string& merges_txt,
                                                   const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(std::string vtext, ReadFileToString(vocab_json));
  LMKIT_ASSIGN_OR_RETURN(Json vocab, ParseJson(vtext, vocab_json));
  if (!vocab.is_object()) return Status::InvalidInput(vocab_json, "vocabulary must be a JSON object {token: id}");
  // Specials stored raw, as Hugging Face's BPE model saves them (and lmkit writes them): an entry that is not in
  // byte-level form, or that spells a requested special whose printable form differs. They are the file's specials;
  // the requested ones are enabled.
  auto requested = [&](const std::string& text) {
    return std::find(options.specials.begin(), options.specials.end(), text) != options.specials.end();
  };
  std::map<uint32_t, std::string> raw_specials;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned() || (!requested(it.key()) && PrintableToBytes(it.key()).ok())) continue;
    if (it.value().get<uint64_t>() <= UINT32_MAX) raw_specials[it.value().get<uint32_t>()] = it.key();
  }
  auto tok = std::make_unique<Tokenizer>();
  LMKIT_RETURN_IF_ERROR(AddPrintableVocab(vocab, vocab_json, *tok, raw_specials));
  for (const auto& [id, text] : raw_specials) {
    const auto bytes = PrintableToBytes(text);
    if (bytes.ok() && *bytes == text) continue;  // also an ordinary token: FinishWith enables it by its text
    LMKIT_RETURN_IF_ERROR(tok->AddSpecial(text, id, requested(text)).WithSubject(vocab_json));
  }
  LMKIT_ASSIGN_OR_RETURN(std::string mtext, ReadFileToString(merges_txt));
  std::string_view text = mtext;
  size_t line_no = 0;
  uint32_t rank = 0;
  while (!text.empty()) {
    const std::string_view line = TakeLine(&text);
    ++line_no;
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    std::string where = merges_txt + ":" + std::to_string(line_no);
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != line.npos)
      return Status::InvalidInput(where, "expected two tokens separated by one space");
    LMKIT_RETURN_IF_ERROR(AddPrintableMerge(vocab, line.substr(0, sp), line.substr(sp + 1), rank++, where, *tok));
  }
  tok->set_pattern(options.pattern.value_or(PretokPattern::kGpt2));
  tok->set_description("vocab.json + merges.txt " + vocab_json);
  LMKIT_RETURN_IF_ERROR(FinishWith(*tok, options, vocab_json));
  return tok;
}

Result<std::unique_ptr<Tokenizer>> ReadHfTokenizerJson(const std::string& path, const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, path));
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    return Status::InvalidInput(path, "not a tokenizer.json (no \"model\" object)");
  const Json& model = j["model"];
  LMKIT_ASSIGN_OR_RETURN(const std::string model_type, StrField(model, "type", "BPE", path));
  if (model_type != "BPE") return Status::Unsupported(path, "model type " + DumpJson(model_type, -1) + " is not BPE");
  if (j.contains("normalizer") && !j["normalizer"].is_null())
    return Status::Unsupported(path, "tokenizer.json has a normalizer; lmkit implements byte-level BPE without one");
  if (!model.contains("vocab") || !model.contains("merges"))
    return Status::InvalidInput(path, "model needs \"vocab\" and \"merges\"");

  // Pre-tokenizer: ByteLevel (GPT-2 regex) or Split(one of the known regexes) followed by ByteLevel.
  std::optional<PretokPattern> pattern;
  const Json pre = j.value("pre_tokenizer", Json());
  // A ByteLevel step: whether it splits with GPT-2's regex itself.
  auto byte_level = [&](const Json& p) -> Result<bool> {
    LMKIT_ASSIGN_OR_RETURN(bool prefix_space, BoolField(p, "add_prefix_space", false, path));
    if (prefix_space) return Status::Unsupported(path, "ByteLevel add_prefix_space=true is not supported");
    return BoolField(p, "use_regex", true, path);
  };
  LMKIT_ASSIGN_OR_RETURN(const std::string pre_type, StrField(pre, "type", "", path));
  if (pre_type == "ByteLevel") {
    LMKIT_ASSIGN_OR_RETURN(bool use_regex, byte_level(pre));
    if (use_regex) pattern = PretokPattern::kGpt2;
  } else if (pre_type == "Sequence" && pre.contains("pretokenizers")) {
    if (!pre["pretokenizers"].is_array()) return Status::InvalidInput(path, "\"pretokenizers\" must be a list");
    for (const Json& p : pre["pretokenizers"]) {
      if (!p.is_object()) return Status::InvalidInput(path, "\"pretokenizers\" entries must be objects");
      LMKIT_ASSIGN_OR_RETURN(const std::string type, StrField(p, "type", "", path));
      if (type == "ByteLevel") {
        LMKIT_ASSIGN_OR_RETURN(bool use_regex, byte_level(p));
        if (use_regex && !pattern) pattern = PretokPattern::kGpt2;
      } else if (type == "Split" && p.contains("pattern") && p["pattern"].is_object() &&
                 p["pattern"].contains("Regex")) {
        if (!p["pattern"]["Regex"].is_string()) return Status::InvalidInput(path, "Split \"Regex\" must be a string");
        pattern = PatternFromRegex(p["pattern"]["Regex"].get<std::string>());
        if (!pattern && !options.pattern)
          return Status::Unsupported(
              path, "Split pattern is not one of gpt2/cl100k/o200k; pass " + Field("pattern") + " to override");
      } else if (!options.pattern) {
        return Status::Unsupported(path, "pre-tokenizer " + DumpJson(type, -1) + " is not supported");
      }
    }
  }
  if (options.pattern) pattern = options.pattern;
  if (!pattern)
    return Status::Unsupported(path, "cannot map the pre_tokenizer to gpt2/cl100k/o200k; pass " + Field("pattern"));

  // A present added_tokens that is not a list (null aside) is refused: ignoring it would drop the special tokens.
  if (j.contains("added_tokens") && !j["added_tokens"].is_array() && !j["added_tokens"].is_null())
    return Status::InvalidInput(path, "\"added_tokens\" is not a list");
  std::vector<SpecialToken> added;
  std::map<uint32_t, std::string> added_by_id;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const Json& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id"))
        return Status::InvalidInput(path, "added_tokens entries need \"id\" and \"content\"");
      LMKIT_ASSIGN_OR_RETURN(uint32_t id, JsonId(a["id"], path, "added token"));
      added.push_back({a["content"].get<std::string>(), id});
      added_by_id.emplace(id, added.back().text);
    }
  }

  auto tok = std::make_unique<Tokenizer>();
  const Json& vocab = model["vocab"];
  LMKIT_RETURN_IF_ERROR(AddPrintableVocab(vocab, path, *tok, added_by_id));
  if (!model["merges"].is_array()) return Status::InvalidInput(path, "\"merges\" must be a list");
  uint32_t rank = 0;
  for (const Json& m : model["merges"]) {
    std::string where = path + ": merge " + std::to_string(rank);
    if (m.is_string()) {
      std::string s = m.get<std::string>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        return Status::InvalidInput(where, "expected \"a b\"");
      LMKIT_RETURN_IF_ERROR(AddPrintableMerge(vocab, s.substr(0, sp), s.substr(sp + 1), rank, where, *tok));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      LMKIT_RETURN_IF_ERROR(
          AddPrintableMerge(vocab, m[0].get<std::string>(), m[1].get<std::string>(), rank, where, *tok));
    } else {
      return Status::InvalidInput(where, "expected \"a b\" or [\"a\", \"b\"]");
    }
    ++rank;
  }
  for (auto& a : added) LMKIT_RETURN_IF_ERROR(tok->AddSpecial(std::move(a.text), a.id, true).WithSubject(path));
  LMKIT_ASSIGN_OR_RETURN(bool ignore_merges, BoolField(model, "ignore_merges", false, path));
  tok->set_whole_piece_shortcut(ignore_merges);
  tok->set_pattern(*pattern);
  tok->set_description("tokenizer.json " + path);
  LMKIT_RETURN_IF_ERROR(FinishWith(*tok, options, path));
  return tok;
}

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& spec, const TokenizerOptions& options) {
  if (IsDir(spec)) {
    // tokenizer.json first: it alone records the special tokens (a trained folder's, a Hugging Face model's), so the
    // folder gives the ids its tokenizer.json gives.
    if (IsFile(spec + "/tokenizer.json")) return ReadHfTokenizerJson(spec + "/tokenizer.json", options);
    if (IsFile(spec + "/vocab.json") && IsFile(spec + "/merges.txt"))
      return ReadVocabMerges(spec + "/vocab.json", spec + "/merges.txt", options);
    // Half of a vocab.json + merges.txt pair is named: "has neither" would send the user looking for the wrong file.
    if (IsFile(spec + "/vocab.json")) return Status::NotFound(spec, "directory has vocab.json but no merges.txt");
    if (IsFile(spec + "/merges.txt")) return Status::NotFound(spec, "directory has merges.txt but no vocab.json");
    return Status::NotFound(spec, "directory has neither vocab.json + merges.txt nor tokenizer.json");
  }
  if (IsFile(spec)) {
    if (EndsWith(spec, ".json")) return ReadHfTokenizerJson(spec, options);
    return ReadTiktoken(spec, options);
  }
  for (const char* name : kBuiltins) {
    if (spec != name) continue;
    LMKIT_ASSIGN_OR_RETURN(std::string path, FindDataFile(std::string("tokenizers/") + name + ".tiktoken"));
    auto tok = ReadTiktoken(path, options);
    if (tok.ok()) (*tok)->set_description(std::string(name) + " (built-in)");
    return tok;
  }
  std::string msg = "no such file or directory, and not a built-in tokenizer (gpt2, cl100k_base, o200k_base)";
  for (const char* name : kBuiltins)
    if (std::string_view(name).rfind(spec, 0) == 0 && !spec.empty())
      msg += "; did you mean '" + std::string(name) + "'?";
  return Status::NotFound(spec, msg);
}

}  // namespace lmkit::bpe
