// SentencePiece `.model` files of BPE type (Llama 2, Mistral v1/v3), parsed with protobuf from lmkit's own copy of
// the schema's fields (sentencepiece_model.proto), and mapped onto lmkit's character-level BPE:
// - sentencepiece's normalizer (normalizer.cc) with the "identity" rules: remove_extra_whitespaces drops leading and
//   trailing spaces and collapses runs; escape_whitespaces writes ' ' as U+2581; add_dummy_prefix puts one U+2581 at
//   the start of the input, even before a space. A precompiled character map (nmt_nfkc, ...) is refused.
// - sentencepiece's BPE (bpe_model.cc) merges, among adjacent symbols whose concatenation is a piece, the one whose
//   piece has the highest score, leftmost first. That is lmkit's "lowest rank, leftmost" with, for every piece and
//   every cut of it into two pieces, the rule (left, right) -> piece ranked by the piece's score (equal scores, equal
//   ranks: Llama 2's runs of U+2581 all score -1e9).
// - A character that is no piece becomes its <0xXX> byte pieces (byte_fallback) or the unknown piece, consecutive
//   unknowns fused into one (sentencepiece_processor.cc); user-defined pieces are matched in the text as a whole;
//   control pieces (<s>, [INST]) are never matched in text, as sentencepiece's Encode never does.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/file_reader.h"
#include "sentencepiece_model.pb.h"

namespace lmkit::bpe {
namespace {

using Piece = spm::ModelProto::SentencePiece;

constexpr size_t kMaxPieceBytes = 2048;  // 512 characters of up to 4 bytes

// "<0x41>" -> 0x41 (sentencepiece's byte pieces); -1 otherwise.
int SpmBytePiece(std::string_view k) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (k.size() != 6 || k.substr(0, 3) != "<0x" || k[5] != '>') return -1;
  const int hi = hex(k[3]), lo = hex(k[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

const char* SpmTypeName(int t) {
  switch (t) {
    case Piece::NORMAL:
      return "NORMAL";
    case Piece::UNKNOWN:
      return "UNKNOWN";
    case Piece::CONTROL:
      return "CONTROL";
    case Piece::USER_DEFINED:
      return "USER_DEFINED";
    case Piece::UNUSED:
      return "UNUSED";
    default:
      return "BYTE";
  }
}

Result<std::shared_ptr<const HfRegex>> SpmRegex(const std::string& re, const std::string& path) {
  auto r = HfRegex::Compile(re);
  if (!r.ok()) return Status::Internal(path + ": " + r.status().message());
  return *r;
}

}  // namespace

namespace detail {
bool LooksLikeSentencePiece(std::string_view head) {
  // A ModelProto starts with field 1 (pieces), length-delimited: tag 0x0A, a varint length, then a SentencePiece
  // message whose first field is 1 (piece, tag 0x0A) too. A text rank file never has that second 0x0A so early.
  if (head.size() < 4 || head[0] != '\x0A') return false;
  size_t i = 1;
  while (i < head.size() && i < 6 && (static_cast<unsigned char>(head[i]) & 0x80)) ++i;
  return i + 1 < head.size() && head[i + 1] == '\x0A';
}
}  // namespace detail

Result<std::unique_ptr<Tokenizer>> ReadSentencePieceModel(const std::string& path, const TokenizerOptions& options) {
  if (options.pattern)
    return Status::InvalidArgument(path + " is a SentencePiece model, which has no pre-tokenization pattern; drop " +
                                   Field("pattern"));
  LMKIT_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  spm::ModelProto model;
  if (!model.ParseFromString(bytes))
    return Status::InvalidInput(path, "not a SentencePiece model (the ModelProto message does not parse)");
  if (model.pieces_size() == 0) return Status::InvalidInput(path, "SentencePiece model has no pieces");
  const spm::TrainerSpec& trainer = model.trainer_spec();
  if (trainer.model_type() != spm::TrainerSpec::BPE) {
    static const char* const kTypes[] = {"?", "UNIGRAM", "BPE", "WORD", "CHAR"};
    const int t = trainer.model_type();
    return Status::Unsupported(path, std::string("SentencePiece model type ") + kTypes[t >= 1 && t <= 4 ? t : 0] +
                                         " is not implemented (lmkit reads BPE models)");
  }
  if (trainer.treat_whitespace_as_suffix())
    return Status::Unsupported(path, "SentencePiece treat_whitespace_as_suffix is not implemented");
  const spm::NormalizerSpec& norm = model.normalizer_spec();
  if (!norm.precompiled_charsmap().empty())
    return Status::Unsupported(path, "SentencePiece normalizer \"" + norm.name() +
                                         "\" has a precompiled character map, which lmkit does not implement "
                                         "(models with the \"identity\" rule only)");

  auto tok = std::make_unique<Tokenizer>();
  tok->ReserveTokens(static_cast<size_t>(model.pieces_size()));
  uint32_t unk = kNoId;
  std::vector<uint32_t> normal;  // ids of NORMAL pieces of more than one byte: the merge results
  std::vector<std::string> user_defined;
  for (int i = 0; i < model.pieces_size(); ++i) {
    const Piece& p = model.pieces(i);
    const uint32_t id = static_cast<uint32_t>(i);
    auto where = [&] { return path + ": piece " + std::to_string(i); };
    if (p.piece().empty()) return Status::InvalidInput(where(), "piece is empty");
    // sentencepiece's trainer allows pieces of up to 512 characters; a longer one would make finding its merges
    // quadratic.
    if (p.piece().size() > kMaxPieceBytes)
      return Status::InvalidInput(where(), "piece is longer than " + std::to_string(kMaxPieceBytes) + " bytes");
    if (std::isnan(p.score())) return Status::InvalidInput(where(), "score is not a number");
    Status st;
    switch (p.type()) {
      case Piece::NORMAL:
        st = tok->AddToken(p.piece(), id);
        if (p.piece().size() > 1) normal.push_back(id);
        break;
      case Piece::USER_DEFINED:
        st = tok->AddToken(p.piece(), id);
        user_defined.push_back(p.piece());
        break;
      case Piece::CONTROL:
        st = tok->AddSpecial(p.piece(), id, false);
        // --add-special-tokens: sentencepiece's encode(add_bos=True), as Llama 2's and Mistral's tokenizers add it.
        if (p.piece() == trainer.bos_piece()) tok->set_template({id}, {});
        break;
      case Piece::UNKNOWN:
        if (unk != kNoId) return Status::InvalidInput(where(), "a second UNKNOWN piece");
        unk = id;
        st = tok->AddSpecial(p.piece(), id, false);
        break;
      case Piece::BYTE: {
        const int b = SpmBytePiece(p.piece());
        if (b < 0) return Status::InvalidInput(where(), "BYTE piece is not <0xXX>");
        st = trainer.byte_fallback() ? tok->AddByteFallback(static_cast<uint8_t>(b), id)
                                     : tok->AddSpecial(p.piece(), id, false);
        break;
      }
      default:
        return Status::Unsupported(
            where(), std::string("SentencePiece ") + SpmTypeName(p.type()) + " pieces are not implemented");
    }
    if (!st.ok()) return st.WithSubject(where());
  }
  if (unk == kNoId) return Status::InvalidInput(path, "SentencePiece model has no UNKNOWN piece");

  // Ranks: the pieces by score, highest first; equal scores share a rank, so that the leftmost pair wins among them.
  std::stable_sort(normal.begin(), normal.end(),
                   [&](uint32_t a, uint32_t b) { return model.pieces(a).score() > model.pieces(b).score(); });
  uint32_t rank = 0;
  for (size_t k = 0; k < normal.size(); ++k) {
    const std::string& t = model.pieces(normal[k]).piece();
    if (k > 0 && model.pieces(normal[k]).score() != model.pieces(normal[k - 1]).score()) ++rank;
    // Cuts at character boundaries: symbols are whole characters.
    for (size_t cut = 1; cut < t.size(); ++cut) {
      if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;
      const uint32_t left = tok->TokenId(std::string_view(t).substr(0, cut));
      const uint32_t right = tok->TokenId(std::string_view(t).substr(cut));
      if (left == kNoId || right == kNoId) continue;
      LMKIT_RETURN_IF_ERROR(tok->AddMerge(left, right, rank, normal[k]).WithSubject(path));
    }
  }
  tok->set_char_level(trainer.byte_fallback(), unk, /*fuse_unk=*/true);

  const std::string space = norm.escape_whitespaces() ? "\xE2\x96\x81" : " ";
  auto pipeline = std::make_shared<Pipeline>();
  if (norm.remove_extra_whitespaces()) {
    // Leading spaces, runs of spaces, trailing spaces (and, once escaped, trailing U+2581 written in the text).
    const char* const kRules[][2] = {{"\\A +", ""}, {" {2,}", " "}, {nullptr, ""}};
    for (const auto& rule : kRules) {
      NormalizerStep s;
      s.kind = NormalizerStep::Kind::kReplace;
      s.text = rule[1];
      const std::string re = rule[0] ? rule[0] : norm.escape_whitespaces() ? "[ \\x{2581}]+\\z" : " +\\z";
      LMKIT_ASSIGN_OR_RETURN(s.regex, SpmRegex(re, path));
      pipeline->normalizer.push_back(std::move(s));
    }
  }
  PreTokenizerStep meta;
  meta.kind = PreTokenizerStep::Kind::kMetaspace;
  meta.replacement = space;
  meta.split = false;
  meta.prepend = norm.add_dummy_prefix() ? PreTokenizerStep::Prepend::kInputStart : PreTokenizerStep::Prepend::kNever;
  pipeline->pre_tokenizer.push_back(std::move(meta));
  if (!user_defined.empty()) {
    // sentencepiece matches user-defined pieces in the normalized text, longest first at each position, and never
    // merges them: a Split isolates them (a regex alternation, longest first, is that match) and each isolated one
    // encodes as a whole.
    std::stable_sort(user_defined.begin(), user_defined.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    std::string re;
    for (const std::string& u : user_defined) {
      std::string word;  // as the pre-tokenizer sees it, spaces escaped
      for (char c : u) {
        if (c == ' ') {
          word += space;
          re += space;
          continue;
        }
        word.push_back(c);
        if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) re.push_back('\\');
        re.push_back(c);
      }
      re.push_back('|');
      LMKIT_RETURN_IF_ERROR(tok->AddFrozenWord(word, tok->TokenId(u)).WithSubject(path));
    }
    re.pop_back();
    PreTokenizerStep split;
    split.kind = PreTokenizerStep::Kind::kSplit;
    split.behavior = SplitBehavior::kIsolated;
    auto r = HfRegex::Compile(re);
    if (!r.ok()) return Status::InvalidInput(path, "USER_DEFINED pieces: " + r.status().message());
    split.regex = *r;
    pipeline->pre_tokenizer.push_back(std::move(split));
  }
  tok->set_pipeline(std::move(pipeline));

  Tokenizer::DecodeRules rules;
  rules.metaspace = space;
  rules.metaspace_drop_first = norm.add_dummy_prefix();
  rules.byte_fallback_decoder = trainer.byte_fallback();
  rules.sentencepiece = true;
  rules.sp_drop_while_empty = norm.remove_extra_whitespaces();
  rules.unk_surface = trainer.unk_surface();
  tok->set_decode_rules(std::move(rules));
  tok->set_description("SentencePiece model " + path);
  LMKIT_RETURN_IF_ERROR(detail::FinishTokenizer(*tok, options, path));
  return tok;
}

}  // namespace lmkit::bpe
