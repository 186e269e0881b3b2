// tiktoken's special-token rules for encoding: which special tokens found in the text become their ids (allowed),
// which make the encode fail (disallowed); an occurrence that is neither is encoded as ordinary text.
//
// Contract:
// - SpecialSet names a subset of a tokenizer's special tokens (Tokenizer::enabled_specials()): all of them, none, or
//   the listed texts. SpecialSetFromText parses the text form "all", "none" or "T[,T...]".
// - SpecialPolicy pairs them as tiktoken's encode(allowed_special=..., disallowed_special=...) does: disallowed "all"
//   means every special that is not allowed. tiktoken's defaults are SpecialPolicy::Tiktoken() (allowed none,
//   disallowed all: any special-token text is an error); the default-constructed policy allows all (and so disallows
//   nothing).
// - SpecialRules::Resolve checks the policy against one tokenizer. Errors: kInvalidArgument naming
//   Field("allowed_special") or Field("disallowed_special") when a listed text is not a special of the tokenizer.
//   The result is immutable and may be shared between threads; it refers to nothing in the tokenizer.
// - FindDisallowed(text) is the first disallowed occurrence (leftmost; the longest among those starting at one byte),
//   as a value, so that each front end words its own error; DisallowedSpecialError is the core's wording.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

enum class SpecialSetKind { kAll, kNone, kListed };

struct SpecialSet {
  SpecialSetKind kind = SpecialSetKind::kAll;
  std::vector<std::string> tokens;  // kListed only

  static SpecialSet All() { return {SpecialSetKind::kAll, {}}; }
  static SpecialSet None() { return {SpecialSetKind::kNone, {}}; }
  static SpecialSet Listed(std::vector<std::string> tokens) { return {SpecialSetKind::kListed, std::move(tokens)}; }
};

// The names of the two keyword sets, for parsing and help: {"all", kAll}, {"none", kNone}.
struct SpecialSetEntry {
  std::string_view name;
  SpecialSetKind kind;
};
inline constexpr SpecialSetEntry kSpecialSetNames[] = {{"all", SpecialSetKind::kAll}, {"none", SpecialSetKind::kNone}};

// "all" | "none" | "T[,T...]" (split on commas; a special token containing a comma cannot be listed). `field` names
// the request field in the error (kInvalidArgument for an empty text or an empty item).
Result<SpecialSet> SpecialSetFromText(std::string_view text, std::string_view field);

struct SpecialPolicy {
  SpecialSet allowed = SpecialSet::All();
  SpecialSet disallowed = SpecialSet::All();  // kAll: every special that is not allowed

  static SpecialPolicy Tiktoken() { return {SpecialSet::None(), SpecialSet::All()}; }
};

// A disallowed special token found in a text: its text and the byte offset of its first byte.
struct DisallowedSpecial {
  std::string token;
  uint64_t offset = 0;
};

class SpecialRules {
 public:
  SpecialRules() = default;  // allows nothing, disallows nothing
  static Result<SpecialRules> Resolve(const Tokenizer& tokenizer, const SpecialPolicy& policy);
  // Every special of the tokenizer allowed, none disallowed (the tokenizer's own matching).
  static SpecialRules AllowAll(const Tokenizer& tokenizer);

  // Matches the allowed specials; allowed_id(match.index) is the id to emit.
  const SpecialTokenSplitter& allowed() const { return allowed_; }
  uint32_t allowed_id(int index) const { return allowed_ids_[static_cast<size_t>(index)]; }
  bool has_disallowed() const { return !disallowed_.empty(); }
  std::optional<DisallowedSpecial> FindDisallowed(std::string_view text) const;
  // The specials whose occurrences must not be cut in two (allowed and disallowed), for the chunk cuts.
  const std::vector<SpecialToken>& watched() const { return watched_; }

 private:
  SpecialTokenSplitter allowed_;
  std::vector<uint32_t> allowed_ids_;
  SpecialTokenSplitter disallowed_;
  std::vector<SpecialToken> watched_;
};

// kInvalidInput with `subject` (the input's name): the special token, its byte offset, and the fields that change
// the rule.
Status DisallowedSpecialError(const std::string& subject, const DisallowedSpecial& found);

}  // namespace lmkit::bpe
