// tiktoken's allowed_special / disallowed_special rules, against ids and errors from pip's tiktoken 0.14.0 (values
// noted beside each check).
#include "lmkit/bpe/encode/special_policy.h"

#include <catch2/catch.hpp>

#include "encode_test_helpers.h"

using namespace lmkit;
using namespace lmkit::bpe;
using namespace lmkit::bpe::test_helpers;

namespace {

std::vector<uint32_t> EncodeWith(const Tokenizer& tok, const SpecialRules& rules, std::string_view text) {
  Encoder enc(tok);
  enc.set_special_rules(&rules);
  std::vector<uint32_t> ids;
  enc.Encode(text, &ids);
  return ids;
}

SpecialRules Rules(const Tokenizer& tok, SpecialSet allowed, SpecialSet disallowed) {
  auto r = SpecialRules::Resolve(tok, {std::move(allowed), std::move(disallowed)});
  REQUIRE(r.ok());
  return std::move(*r);
}

}  // namespace

TEST_CASE("special policy: all, none and lists parse, and empty items are usage errors", "[bpe][special_policy]") {
  CHECK(SpecialSetFromText("all", "allowed_special")->kind == SpecialSetKind::kAll);
  CHECK(SpecialSetFromText("none", "allowed_special")->kind == SpecialSetKind::kNone);
  auto list = SpecialSetFromText("<|a|>,<|b|>,<|a|>", "allowed_special");
  REQUIRE(list.ok());
  CHECK(list->kind == SpecialSetKind::kListed);
  CHECK(list->tokens == std::vector<std::string>{"<|a|>", "<|b|>"});
  for (const char* bad : {"", ",", "<|a|>,", ",<|a|>", "<|a|>,,<|b|>"}) {
    auto r = SpecialSetFromText(bad, "disallowed_special");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidArgument);
    CHECK(r.status().ToString().rfind("disallowed_special", 0) == 0);
  }
}

TEST_CASE("special policy: a listed token must be a special of the tokenizer", "[bpe][special_policy]") {
  const Tokenizer& gpt2 = Builtin("gpt2");
  auto r = SpecialRules::Resolve(gpt2, {SpecialSet::Listed({"<|im_start|>"}), SpecialSet::All()});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidArgument);
  CHECK(r.status().ToString() ==
        "allowed_special: \"<|im_start|>\" is not a special token of this tokenizer (it has \"<|endoftext|>\")");
  auto d = SpecialRules::Resolve(gpt2, {SpecialSet::All(), SpecialSet::Listed({"x"})});
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().ToString().rfind("disallowed_special: \"x\"", 0) == 0);
}

TEST_CASE("special policy: tiktoken's defaults refuse special-token text, naming it and its offset",
          "[bpe][special_policy]") {
  const Tokenizer& cl100k = Builtin("cl100k_base");
  const SpecialRules rules = *SpecialRules::Resolve(cl100k, SpecialPolicy::Tiktoken());
  CHECK(rules.allowed().empty());
  CHECK_FALSE(rules.FindDisallowed("ab <|fim_pre").has_value());
  auto found = rules.FindDisallowed("ab <|fim_prefix|> <|endoftext|>");
  REQUIRE(found.has_value());
  CHECK(found->token == "<|fim_prefix|>");  // tiktoken: "disallowed special token '<|fim_prefix|>'"
  CHECK(found->offset == 3);
  CHECK(DisallowedSpecialError("in.txt", *found).ToString() ==
        "in.txt: byte 3: the text is the special token \"<|fim_prefix|>\", which is disallowed (allowed_special "
        "encodes it as a special, disallowed_special none as ordinary text)");
}

TEST_CASE("special policy: allowed specials are ids, the rest is ordinary text (tiktoken's ids)",
          "[bpe][special_policy]") {
  const Tokenizer& gpt2 = Builtin("gpt2");
  // tiktoken gpt2 encode("a<|endoftext|>b", allowed_special="all") and encode_ordinary(...).
  CHECK(EncodeWith(gpt2, SpecialRules::AllowAll(gpt2), "a<|endoftext|>b") == std::vector<uint32_t>{64, 50256, 65});
  const SpecialRules none = Rules(gpt2, SpecialSet::None(), SpecialSet::None());
  CHECK_FALSE(none.has_disallowed());
  CHECK(EncodeWith(gpt2, none, "a<|endoftext|>b") == std::vector<uint32_t>{64, 27, 91, 437, 1659, 5239, 91, 29, 65});
  // tiktoken cl100k encode("x<|fim_prefix|>y<|endoftext|>z", allowed_special={"<|endoftext|>"}, disallowed_special=()).
  const Tokenizer& cl100k = Builtin("cl100k_base");
  const SpecialRules some = Rules(cl100k, SpecialSet::Listed({"<|endoftext|>"}), SpecialSet::None());
  CHECK(EncodeWith(cl100k, some, "x<|fim_prefix|>y<|endoftext|>z") ==
        std::vector<uint32_t>{87, 27, 91, 69, 318, 14301, 91, 29, 88, 100257, 89});
  // Disallowed "all" is every special not allowed: here all but <|endoftext|>.
  const SpecialRules rest = Rules(cl100k, SpecialSet::Listed({"<|endoftext|>"}), SpecialSet::All());
  CHECK_FALSE(rest.FindDisallowed("a<|endoftext|>b").has_value());
  CHECK(rest.FindDisallowed("a<|endoftext|>b<|fim_suffix|>")->offset == 15);
  // A token both allowed and listed as disallowed is refused (tiktoken checks the disallowed set first).
  const SpecialRules both = Rules(gpt2, SpecialSet::All(), SpecialSet::Listed({"<|endoftext|>"}));
  CHECK(both.FindDisallowed("<|endoftext|>").has_value());
}
