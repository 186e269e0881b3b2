#include "lmkit/bpe/files/tokenizer_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include "lmkit/bpe/files/byte_unicode.h"
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

std::optional<PretokPattern> PatternFromStem(const std::string& file) {
  std::string b = BaseName(file);
  if (b.rfind("gpt2", 0) == 0 || b.rfind("r50k", 0) == 0) return PretokPattern::kGpt2;
  if (b.rfind("cl100k", 0) == 0) return PretokPattern::kCl100k;
  if (b.rfind("o200k", 0) == 0) return PretokPattern::kO200k;
  return std::nullopt;
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
    *pattern = detail::PatternFromRegex(j["pat_str"].get<std::string>());
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

}  // namespace

namespace detail {

namespace {
int Base64Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

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

std::optional<PretokPattern> PatternFromRegex(std::string_view re) {
  for (PretokPattern p : {PretokPattern::kGpt2, PretokPattern::kCl100k, PretokPattern::kO200k})
    if (PatternRegex(p) == re) return p;
  return std::nullopt;
}

Status FinishTokenizer(Tokenizer& tok, const TokenizerOptions& options, const std::string& subject) {
  for (const auto& s : options.specials) {
    Status st = tok.EnableSpecial(s);
    if (!st.ok())
      return Status::NotFound(s, Field("special_token") + " is not a special token or a token of " + subject);
  }
  return tok.Finish().WithSubject(subject);
}

std::string_view TakeLine(std::string_view* text) {
  const size_t nl = text->find('\n');
  std::string_view line = text->substr(0, nl);
  text->remove_prefix(nl == std::string_view::npos ? text->size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace detail

std::vector<std::string> BuiltinTokenizerNames() { return {std::begin(kBuiltins), std::end(kBuiltins)}; }

Result<std::unique_ptr<Tokenizer>> ReadTiktoken(const std::string& path, const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto tok = std::make_unique<Tokenizer>();
  std::string_view text = file.view();
  tok->ReserveTokens(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::string bytes;
  size_t line_no = 0;
  while (!text.empty()) {
    const std::string_view line = detail::TakeLine(&text);
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
    if (!detail::DecodeBase64(line.substr(0, sp), &bytes))
      return Status::InvalidInput(where(), "token is not valid base64");
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
  LMKIT_RETURN_IF_ERROR(detail::FinishTokenizer(*tok, options, path));
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
    char head[16] = {};
    std::ifstream f(spec, std::ios::binary);
    f.read(head, sizeof(head));
    if (detail::LooksLikeSentencePiece(std::string_view(head, static_cast<size_t>(f.gcount()))))
      return ReadSentencePieceModel(spec, options);
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
