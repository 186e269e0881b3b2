// See special_policy.h. Allowed specials that are found are emitted as their ids, disallowed ones are an error, and
// the rest is ordinary text: that is tiktoken's rule (its Rust core skips a special that is not allowed and searches
// on from the next byte), which makes matching among the allowed specials alone equivalent.
#include "lmkit/bpe/encode/special_policy.h"

#include <algorithm>

#include "lmkit/common/json.h"
#include "lmkit/common/name_table.h"

namespace lmkit::bpe {

namespace {

std::string Quoted(std::string_view token) { return DumpJson(Json(std::string(token)), -1); }

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The texts of `set` among the tokenizer's specials, checked.
Result<std::vector<std::string>> Members(const Tokenizer& tok, const SpecialSet& set, std::string_view field) {
  std::vector<std::string> all;
  for (const auto& s : tok.enabled_specials()) all.push_back(s.text);
  switch (set.kind) {
    case SpecialSetKind::kAll:
      return all;
    case SpecialSetKind::kNone:
      return std::vector<std::string>{};
    case SpecialSetKind::kListed:
      break;
  }
  for (const auto& t : set.tokens) {
    if (Contains(all, t)) continue;
    std::string known;
    for (const auto& s : all) known += (known.empty() ? "" : ", ") + Quoted(s);
    return Status::InvalidArgument(Field(field) + ": " + Quoted(t) + " is not a special token of this tokenizer (" +
                                   (known.empty() ? std::string("it has none") : "it has " + known) + ")");
  }
  return set.tokens;
}

}  // namespace

Result<SpecialSet> SpecialSetFromText(std::string_view text, std::string_view field) {
  if (const auto* e = FindByName(kSpecialSetNames, text)) return SpecialSet{e->kind, {}};
  if (text.empty()) return Status::InvalidArgument(Field(field) + " must be all, none or a list of special tokens");
  std::vector<std::string> tokens;
  for (size_t pos = 0;;) {
    const size_t comma = text.find(',', pos);
    const std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    if (item.empty())
      return Status::InvalidArgument(Field(field) + ": empty special token in '" + std::string(text) + "'");
    if (!Contains(tokens, item)) tokens.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return SpecialSet::Listed(std::move(tokens));
}

Result<SpecialRules> SpecialRules::Resolve(const Tokenizer& tok, const SpecialPolicy& policy) {
  LMKIT_ASSIGN_OR_RETURN(std::vector<std::string> allowed, Members(tok, policy.allowed, "allowed_special"));
  std::vector<std::string> disallowed;
  if (policy.disallowed.kind == SpecialSetKind::kAll) {
    for (const auto& s : tok.enabled_specials())
      if (!Contains(allowed, s.text)) disallowed.push_back(s.text);
  } else {
    LMKIT_ASSIGN_OR_RETURN(disallowed, Members(tok, policy.disallowed, "disallowed_special"));
  }
  SpecialRules r;
  std::vector<std::string> allowed_texts;
  // In the tokenizer's order (longest first), so that a match index maps to the same special as the tokenizer's own.
  for (const auto& s : tok.enabled_specials()) {
    const bool a = Contains(allowed, s.text), d = Contains(disallowed, s.text);
    if (a) {
      allowed_texts.push_back(s.text);
      r.allowed_ids_.push_back(s.id);
    }
    if (a || d) r.watched_.push_back(s);
  }
  r.allowed_ = SpecialTokenSplitter(allowed_texts);
  r.disallowed_ = SpecialTokenSplitter(disallowed);
  return r;
}

SpecialRules SpecialRules::AllowAll(const Tokenizer& tok) {
  auto r = Resolve(tok, SpecialPolicy{});
  return std::move(*r);  // allowing all names no token, so it cannot fail
}

std::optional<DisallowedSpecial> SpecialRules::FindDisallowed(std::string_view text) const {
  SpecialTokenSplitter::Match m;
  if (!disallowed_.FindNext(text, 0, &m)) return std::nullopt;
  return DisallowedSpecial{std::string(text.substr(m.begin, m.length)), m.begin};
}

Status DisallowedSpecialError(const std::string& subject, const DisallowedSpecial& found) {
  return Status::InvalidInput(subject, "byte " + std::to_string(found.offset) + ": the text is the special token " +
                                           Quoted(found.token) + ", which is disallowed (" + Field("allowed_special") +
                                           " encodes it as a special, " + Field("disallowed_special") +
                                           " none as ordinary text)");
}

}  // namespace lmkit::bpe
