// Mistral's tekken.json, as mistral-common's Tekkenizer reads it (mistral_common/tokens/tokenizers/tekken.py,
// version 1.13.1): "config" holds the pre-tokenization regex ("pattern"), the size of the whole vocabulary
// ("default_vocab_size") and the number of special ids in front of it ("default_num_special_tokens"); "vocab" lists
// tiktoken ranks in order ({"rank": i, "token_bytes": base64}), of which the first default_vocab_size -
// default_num_special_tokens are used, rank r having id r + default_num_special_tokens; "special_tokens" (optional)
// names the first ids, the rest being "<SPECIAL_i>" (files without it get mistral-common's 20 deprecated names).
// Encoding is tiktoken's over the ranks; the special tokens are never matched in text (Tekkenizer.encode passes the
// text to tiktoken with no special tokens).
#include <simdjson.h>

#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/file_reader.h"

namespace lmkit::bpe {
namespace {

namespace sj = simdjson;

// mistral-common's SpecialTokens for files that do not list theirs (Tekkenizer.DEPRECATED_SPECIAL_TOKENS), ids 0-19.
const char* const kTekkenDeprecatedSpecials[] = {"<unk>",
                                                 "<s>",
                                                 "</s>",
                                                 "[INST]",
                                                 "[/INST]",
                                                 "[AVAILABLE_TOOLS]",
                                                 "[/AVAILABLE_TOOLS]",
                                                 "[TOOL_RESULTS]",
                                                 "[/TOOL_RESULTS]",
                                                 "[TOOL_CALLS]",
                                                 "[IMG]",
                                                 "<pad>",
                                                 "[IMG_BREAK]",
                                                 "[IMG_END]",
                                                 "[PREFIX]",
                                                 "[MIDDLE]",
                                                 "[SUFFIX]",
                                                 "[SYSTEM_PROMPT]",
                                                 "[/SYSTEM_PROMPT]",
                                                 "[TOOL_CONTENT]"};

Result<uint64_t> TekkenUint(sj::dom::object obj, const char* key, const std::string& path, const std::string& where) {
  uint64_t v = 0;
  if (obj[key].get_uint64().get(v))
    return Status::InvalidInput(path, where + " \"" + key + "\" must be a non-negative integer");
  return v;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> ReadTekkenJson(const std::string& path, const TokenizerOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  sj::dom::parser parser;
  sj::dom::element root;
  if (sj::error_code err = parser.parse(text.data(), text.size(), true).get(root))
    return Status::InvalidInput(path, std::string("malformed JSON (") + sj::error_message(err) + ")");
  return detail::TekkenFromDom(root, path, options);
}

namespace detail {

Result<std::unique_ptr<Tokenizer>> TekkenFromDom(const sj::dom::element& root, const std::string& path,
                                                 const TokenizerOptions& options) {
  sj::dom::object top, config;
  if (root.get_object().get(top) || top["config"].get_object().get(config))
    return Status::InvalidInput(path, "not a tekken.json (no \"config\" object)");
  std::string_view pattern;
  if (config["pattern"].get_string().get(pattern))
    return Status::InvalidInput(path, "config \"pattern\" must be a string");
  LMKIT_ASSIGN_OR_RETURN(const uint64_t vocab_size, TekkenUint(config, "default_vocab_size", path, "config"));
  LMKIT_ASSIGN_OR_RETURN(const uint64_t num_special, TekkenUint(config, "default_num_special_tokens", path, "config"));
  sj::dom::array vocab;
  if (top["vocab"].get_array().get(vocab)) return Status::InvalidInput(path, "\"vocab\" must be a list");
  if (num_special > vocab_size || vocab_size - num_special > vocab.size() || vocab_size > kMaxTokenId + uint64_t{1})
    return Status::InvalidInput(path, "config default_vocab_size " + std::to_string(vocab_size) +
                                          " is not default_num_special_tokens (" + std::to_string(num_special) +
                                          ") plus at most the " + std::to_string(vocab.size()) + " vocab entries");
  const uint64_t inner = vocab_size - num_special;

  auto tok = std::make_unique<Tokenizer>();
  tok->ReserveTokens(inner);
  std::string bytes;
  uint64_t rank = 0;
  for (sj::dom::element e : vocab) {
    if (rank == inner) break;
    auto where = [&] { return path + ": vocab entry " + std::to_string(rank); };
    sj::dom::object o;
    uint64_t r = 0;
    std::string_view b64;
    if (e.get_object().get(o) || o["rank"].get_uint64().get(r) || o["token_bytes"].get_string().get(b64))
      return Status::InvalidInput(where(), "expected {\"rank\": n, \"token_bytes\": base64}");
    if (r != rank) return Status::InvalidInput(where(), "\"rank\" is " + std::to_string(r) + ", not its position");
    if (!detail::DecodeBase64(b64, &bytes)) return Status::InvalidInput(where(), "\"token_bytes\" is not valid base64");
    if (rank < 256 && (bytes.size() != 1 || static_cast<unsigned char>(bytes[0]) != rank))
      return Status::InvalidInput(where(), "the first 256 ranks must be the single bytes in order");
    if (Status st = tok->AddToken(bytes, static_cast<uint32_t>(rank + num_special)); !st.ok())
      return st.WithSubject(where());
    ++rank;
  }
  tok->AddAllSplitsAsMerges();
  tok->set_whole_piece_shortcut(true);

  std::vector<std::string> specials;
  sj::dom::element st_el;
  if (!top["special_tokens"].get(st_el) && !st_el.is_null()) {
    sj::dom::array arr;
    if (st_el.get_array().get(arr)) return Status::InvalidInput(path, "\"special_tokens\" must be a list");
    for (sj::dom::element e : arr) {
      sj::dom::object o;
      uint64_t r = 0;
      std::string_view s;
      const std::string where = path + ": special token " + std::to_string(specials.size());
      if (e.get_object().get(o) || o["rank"].get_uint64().get(r) || o["token_str"].get_string().get(s))
        return Status::InvalidInput(where, "expected {\"rank\": n, \"token_str\": text}");
      if (r != specials.size()) return Status::InvalidInput(where, "\"rank\" is not its position");
      specials.emplace_back(s);
    }
  } else {
    specials.assign(std::begin(kTekkenDeprecatedSpecials), std::end(kTekkenDeprecatedSpecials));
  }
  if (specials.size() > num_special)
    return Status::InvalidInput(path, std::to_string(specials.size()) +
                                          " special tokens, more than config default_num_special_tokens (" +
                                          std::to_string(num_special) + ")");
  for (size_t i = specials.size(); i < num_special; ++i) specials.push_back("<SPECIAL_" + std::to_string(i) + ">");
  for (size_t i = 0; i < specials.size(); ++i) {
    if (Status s = tok->AddSpecial(specials[i], static_cast<uint32_t>(i), false); !s.ok()) return s.WithSubject(path);
    // --add-special-tokens: mistral-common's Tekkenizer.encode(text, bos=True, eos=False).
    if (specials[i] == "<s>") tok->set_template({static_cast<uint32_t>(i)}, {});
  }

  if (options.pattern) {
    tok->set_pattern(*options.pattern);
  } else if (const auto known = detail::PatternFromRegex(pattern)) {
    tok->set_pattern(*known);
  } else {
    auto re = HfRegex::Compile(pattern);
    if (!re.ok()) return Status::Unsupported(path, "config \"pattern\": " + re.status().message());
    // tiktoken encodes the regex's matches only: Split with Removed + invert keeps exactly those.
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::kSplit;
    s.behavior = SplitBehavior::kRemoved;
    s.invert = true;
    s.regex = *re;
    auto pipeline = std::make_shared<Pipeline>();
    pipeline->pre_tokenizer.push_back(std::move(s));
    tok->set_pipeline(std::move(pipeline));
  }
  tok->set_description("tekken.json " + path);
  LMKIT_RETURN_IF_ERROR(detail::FinishTokenizer(*tok, options, path));
  return tok;
}

}  // namespace detail

}  // namespace lmkit::bpe
