// Reading tokenizers from the files people have: GPT-2 vocab.json + merges.txt, Hugging Face tokenizer.json (BPE
// model), tiktoken rank files, and the built-in names gpt2 / cl100k_base / o200k_base (shipped in data/tokenizers/).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/status.h"

namespace simdjson::dom {
class element;
}

namespace lmkit::bpe {

struct TokenizerOptions {
  std::optional<PretokPattern> pattern;  // overrides the file's
  std::vector<std::string> specials;     // enabled in addition to the file's own (known specials or ordinary tokens)
};

// Resolves `spec` in this order:
//   1. an existing path: a directory holding tokenizer.json (read first: it records the specials), else vocab.json +
//      merges.txt (GPT-2 format; tokens written through GPT-2's byte⇄unicode table, merges ranked by line); a
//      tokenizer.json file, or a tekken.json (a `.json` whose top level has "config" and no "model"); a
//      SentencePiece model (by its content: a serialized ModelProto); a rank file (`*.tiktoken`, Llama 3's
//      tokenizer.model: one `base64(token bytes) rank` per line; rank = id);
//   2. a built-in name (BuiltinTokenizerNames()): data/tokenizers/<name>.tiktoken with <name>.json (pattern and
//      special tokens), found through common/data_dir.h. A built-in's own special tokens are all enabled.
// The pre-tokenization pattern is options.pattern when given, else what the file says (tokenizer.json's
// pre_tokenizer; a rank file's sibling <stem>.json metadata or a known stem: gpt2/r50k → gpt2, cl100k, o200k), else
// gpt2 for vocab.json + merges.txt. Special tokens named in options.specials are enabled (a known special, or an
// ordinary token such as the "<|endoftext|>" of a GPT-2 vocab.json). tokenizer.json's added_tokens are specials, all
// enabled (Hugging Face matches every added token in the text); in model.vocab a special may be keyed by its raw
// content (Hugging Face's way) or by its printable form.
// Errors: kNotFound (no such path or name, with the nearest built-in name), kInvalidInput naming the file and line or
// key (malformed JSON, bad base64, a merge whose parts or result are not in the vocabulary, a missing byte token),
// kUnsupported (a tokenizer.json that is not byte-level BPE, or has a normalizer or pre-tokenizer lmkit does not
// implement), kInvalidArgument (a rank file whose pattern cannot be inferred and no options.pattern). Thread-safe (no
// shared state). The Tokenizer is returned by pointer: encoders keep references to it, so it must not move.
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& spec, const TokenizerOptions& options);

// The single formats LoadTokenizer dispatches to, with its errors.
Result<std::unique_ptr<Tokenizer>> ReadVocabMerges(const std::string& vocab_json, const std::string& merges_txt,
                                                   const TokenizerOptions& options);
Result<std::unique_ptr<Tokenizer>> ReadHfTokenizerJson(const std::string& path, const TokenizerOptions& options);
Result<std::unique_ptr<Tokenizer>> ReadTiktoken(const std::string& path, const TokenizerOptions& options);
// A SentencePiece `.model` (a serialized ModelProto) of BPE type, giving sentencepiece's own ids
// (sentencepiece_model.cpp says how it maps). Errors: kInvalidInput (not a ModelProto, an empty or ill-typed piece,
// no UNKNOWN piece), kUnsupported naming what is not implemented (a UNIGRAM/WORD/CHAR model, a precompiled
// normalization map, UNUSED pieces, treat_whitespace_as_suffix), kInvalidArgument with options.pattern.
Result<std::unique_ptr<Tokenizer>> ReadSentencePieceModel(const std::string& path, const TokenizerOptions& options);
// Mistral's tekken.json: tiktoken ranks (base64 `token_bytes`) after `default_num_special_tokens` special ids, cut to
// `default_vocab_size`, pre-tokenized by `config.pattern`; ids as mistral-common's Tekkenizer.encode gives them (its
// special tokens are never matched in text). Errors: kInvalidInput naming the field, kUnsupported (a pattern PCRE2
// cannot compile), kInvalidArgument with options.pattern.
Result<std::unique_ptr<Tokenizer>> ReadTekkenJson(const std::string& path, const TokenizerOptions& options);

std::vector<std::string> BuiltinTokenizerNames();  // gpt2, cl100k_base, o200k_base

namespace detail {  // shared by the readers
// Standard base64 (padding optional) into *out; false on a character outside the alphabet or leftover bits.
bool DecodeBase64(std::string_view in, std::string* out);
// Whether a file starting with `head` (its first bytes) is a serialized SentencePiece ModelProto.
bool LooksLikeSentencePiece(std::string_view head);
// The hand-written pattern whose regex is exactly `re`, if any.
std::optional<PretokPattern> PatternFromRegex(std::string_view re);
// ReadTekkenJson on a document already parsed (tokenizer.json's reader finds a tekken.json by its keys).
Result<std::unique_ptr<Tokenizer>> TekkenFromDom(const simdjson::dom::element& root, const std::string& path,
                                                 const TokenizerOptions& options);
// Enables options.specials, then tok.Finish(); errors name `subject`.
Status FinishTokenizer(Tokenizer& tok, const TokenizerOptions& options, const std::string& subject);
// Removes the first line from *text and returns it without its "\n" or "\r\n" (rank and merges files come from
// Windows checkouts too).
std::string_view TakeLine(std::string_view* text);
}  // namespace detail

}  // namespace lmkit::bpe
