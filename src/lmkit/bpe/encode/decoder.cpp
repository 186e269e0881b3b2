#include "lmkit/bpe/encode/decoder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lmkit/bpe/encode/id_output.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/io/token_file.h"

namespace lmkit::bpe {

namespace {

Status UnknownId(const Tokenizer& tokenizer, uint32_t id, uint64_t index) {
  return Status::InvalidInput("", "token id " + std::to_string(id) + " at index " + std::to_string(index) +
                                      " is not in the tokenizer (ids 0.." + std::to_string(tokenizer.id_limit() - 1) +
                                      ")");
}

// sentencepiece's SentencePieceProcessor::Decode (sentencepiece_processor.cc), checked against sentencepiece 0.2.3
// on random id sequences of four models (tests/data/bpe/native/goldens_extra.json); byte pieces are written as their
// bytes, without sentencepiece's U+FFFD for ill-formed UTF-8.
Status DecodeSentencePiece(const Tokenizer& tokenizer, const uint32_t* ids, size_t count, uint64_t first_index,
                           std::string* out, DecodeState* state) {
  const Tokenizer::DecodeRules& rules = tokenizer.decode_rules();
  const std::string_view ms = rules.metaspace;
  std::string_view bytes;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t id = ids[i];
    if (!tokenizer.TokenBytes(id, &bytes)) return UnknownId(tokenizer, id, first_index + i);
    const size_t start = out->size();
    if (id == tokenizer.unk_id()) {
      out->append(rules.unk_surface);
    } else if (!tokenizer.is_ordinary(id)) {
      continue;  // CONTROL: invisible, and the start is still the start
    } else {
      // A piece, or a byte-fallback token (one byte: no metaspace).
      if (state->sp_at_start && rules.metaspace_drop_first && bytes.substr(0, ms.size()) == ms)
        bytes.remove_prefix(ms.size());
      for (size_t at; (at = bytes.find(ms)) != std::string_view::npos; bytes.remove_prefix(at + ms.size())) {
        out->append(bytes.substr(0, at));
        out->push_back(' ');
      }
      out->append(bytes);
    }
    state->sp_at_start = state->sp_at_start && rules.sp_drop_while_empty && out->size() == start;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeIds(const Tokenizer& tokenizer, const uint32_t* ids, size_t count, uint64_t first_index, std::string* out,
                 DecodeState* state) {
  std::string_view bytes;
  const Tokenizer::DecodeRules& rules = tokenizer.decode_rules();
  if (!rules.decode_error.empty()) return Status::Unsupported("", rules.decode_error);
  if (rules.sentencepiece) {
    DecodeState fresh;
    fresh.sp_at_start = first_index == 0;
    return DecodeSentencePiece(tokenizer, ids, count, first_index, out, state ? state : &fresh);
  }
  if (rules.active()) {
    // tokenizer.json decoders (tokenizer.h DecodeRules).
    char hex[8];
    for (size_t i = 0; i < count; ++i) {
      if (!tokenizer.TokenBytes(ids[i], &bytes))
        return Status::InvalidInput("", "token id " + std::to_string(ids[i]) + " at index " +
                                            std::to_string(first_index + i) + " is not in the tokenizer (ids 0.." +
                                            std::to_string(tokenizer.id_limit() - 1) + ")");
      if (rules.fallback_as_text) {
        if (const int b = tokenizer.FallbackByteOf(ids[i]); b >= 0) {
          std::snprintf(hex, sizeof hex, "<0x%02X>", b);
          bytes = hex;
        }
      }
      const size_t start = out->size();
      const std::string_view ms = rules.metaspace;
      const bool drop = first_index + i == 0 && rules.metaspace_drop_first;
      while (!bytes.empty()) {
        const size_t at = ms.empty() ? std::string_view::npos : bytes.find(ms);
        out->append(bytes.substr(0, at));
        if (at == std::string_view::npos) break;
        if (!drop) out->push_back(' ');
        bytes.remove_prefix(at + ms.size());
      }
      if (first_index + i == 0) {
        size_t k = 0;
        while (k < rules.strip_leading && start + k < out->size() && (*out)[start + k] == ' ') ++k;
        out->erase(start, k);
      }
    }
    return Status::Ok();
  }
  for (size_t i = 0; i < count; ++i) {
    if (!tokenizer.TokenBytes(ids[i], &bytes))
      return Status::InvalidInput("", "token id " + std::to_string(ids[i]) + " at index " +
                                          std::to_string(first_index + i) + " is not in the tokenizer (ids 0.." +
                                          std::to_string(tokenizer.id_limit() - 1) + ")");
    out->append(bytes);
  }
  return Status::Ok();
}

namespace {

constexpr size_t kBlock = size_t{1} << 16;  // ids decoded per write

// Parses a JSON array of non-negative integers, calling emit(block) every kBlock ids.
template <typename Emit>
Status ParseJsonIds(std::string_view t, const std::string& subject, Emit&& emit) {
  std::vector<uint32_t> block;
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  };
  auto fail = [&](const std::string& what) {
    return Status::InvalidInput(subject,
                                what + " at byte " + std::to_string(i) + " (expected a JSON array of token ids)");
  };
  skip_ws();
  if (i >= t.size() || t[i] != '[') return fail("no '['");
  ++i;
  skip_ws();
  uint64_t index = 0;
  if (i < t.size() && t[i] == ']') {
    ++i;
  } else {
    while (true) {
      skip_ws();
      size_t start = i;
      uint64_t v = 0;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9' && v <= 0xFFFFFFFFull) v = v * 10 + (t[i++] - '0');
      if (i == start || v > 0xFFFFFFFFull || (i < t.size() && (t[i] == '.' || t[i] == 'e' || t[i] == 'E')) ||
          (i - start > 1 && t[start] == '0')) {
        i = start;
        return fail("value " + std::to_string(index) + " is not a non-negative integer token id");
      }
      block.push_back(static_cast<uint32_t>(v));
      ++index;
      if (block.size() == kBlock) {
        LMKIT_RETURN_IF_ERROR(emit(block));
        block.clear();
      }
      skip_ws();
      if (i < t.size() && t[i] == ',') {
        ++i;
        continue;
      }
      if (i < t.size() && t[i] == ']') {
        ++i;
        break;
      }
      return fail("expected ',' or ']'");
    }
  }
  skip_ws();
  if (i != t.size()) return fail("trailing data");
  if (!block.empty()) LMKIT_RETURN_IF_ERROR(emit(block));
  return Status::Ok();
}

}  // namespace

Result<DecodeResult> DecodeFile(const DecodeRequest& req) {
  DecodeResult rep;
  const double t0 = MonotonicSeconds();
  auto loaded = LoadTokenizer(req.tokenizer, req.tokenizer_options);
  if (!loaded.ok() && loaded.status().code() == ErrorCode::kInvalidArgument && !req.tokenizer_options.pattern) {
    // A rank file without metadata needs a pattern only for encoding: decoding does not use it, so any will do.
    TokenizerOptions any = req.tokenizer_options;
    any.pattern = PretokPattern::kGpt2;
    loaded = LoadTokenizer(req.tokenizer, any);
  }
  LMKIT_ASSIGN_OR_RETURN(auto tok, std::move(loaded));
  rep.tokenizer = tok->description();
  rep.input = req.input;
  rep.output = req.output.empty() ? "-" : req.output;
  IdFormat format = req.format.value_or(req.input == "-" ? IdFormat::kBin : IdFormatFromPath(req.input));
  if (format == IdFormat::kText) format = IdFormat::kBin;  // .txt input is not an id format: treat as raw ids
  if (req.format && *req.format == IdFormat::kText)
    return Status::InvalidArgument(
        "decode reads bin, npy or json ids (text output of encode is not meant to be read back)");
  rep.format = format;
  LMKIT_ASSIGN_OR_RETURN(io::TokenDtype dtype, ResolveDtype(req.dtype, *tok));
  const std::string subject = req.input == "-" ? "<stdin>" : req.input;

  ByteOutput out = ByteOutput::ToFd(req.stdout_fd, "stdout");
  if (!req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(out, ByteOutput::ToFile(req.output));
  }
  std::string bytes;
  uint64_t index = 0;
  DecodeState state;
  auto emit = [&](const uint32_t* ids, size_t n) -> Status {
    bytes.clear();
    LMKIT_RETURN_IF_ERROR(DecodeIds(*tok, ids, n, index, &bytes, &state).WithSubject(subject));
    index += n;
    rep.bytes += bytes.size();
    return out.Write(bytes);
  };

  if (format == IdFormat::kJson) {
    LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(req.input));
    LMKIT_RETURN_IF_ERROR(
        ParseJsonIds(text, subject, [&](const std::vector<uint32_t>& b) { return emit(b.data(), b.size()); }));
  } else if (req.input == "-") {
    if (format == IdFormat::kNpy) return Status::InvalidArgument("decoding .npy needs a file, not stdin");
    const size_t width = dtype == io::TokenDtype::kU16 ? 2 : 4;
    std::string raw(kBlock * width, '\0');
    std::vector<uint32_t> ids;
    size_t have = 0;
    while (true) {
      ssize_t r = ::read(0, raw.data() + have, raw.size() - have);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::FromErrno(subject, "cannot read", errno);
      if (r == 0) break;
      have += static_cast<size_t>(r);
      size_t whole = have / width;
      ids.resize(whole);
      for (size_t k = 0; k < whole; ++k) {
        if (width == 2) {
          uint16_t v;
          std::memcpy(&v, raw.data() + 2 * k, 2);
          ids[k] = v;
        } else {
          std::memcpy(&ids[k], raw.data() + 4 * k, 4);
        }
      }
      LMKIT_RETURN_IF_ERROR(emit(ids.data(), whole));
      std::memmove(raw.data(), raw.data() + whole * width, have - whole * width);
      have -= whole * width;
    }
    if (have != 0)
      return Status::InvalidInput(subject, "input size is not a multiple of " + std::to_string(width) +
                                               " bytes (the size of one " + (width == 2 ? "uint16" : "uint32") +
                                               " id)");
  } else {
    LMKIT_ASSIGN_OR_RETURN(io::TokenFile file, io::TokenFile::Open(req.input, dtype));
    std::vector<uint32_t> ids;
    for (uint64_t start = 0; start < file.size(); start += kBlock) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, file.size() - start));
      ids.resize(n);
      for (size_t k = 0; k < n; ++k) ids[k] = file[start + k];
      LMKIT_RETURN_IF_ERROR(emit(ids.data(), n));
      // Drop pages already decoded so a huge id file does not stay resident.
      if ((start / kBlock) % 64 == 63) {
        const size_t width = file.dtype() == io::TokenDtype::kU16 ? 2 : 4;
        const size_t header = static_cast<size_t>(file.bytes().data() - file.mapped().data());
        file.mapped().Advise(MappedFile::Advice::kDontNeed, 0, header + (start + n) * width);
      }
    }
  }
  LMKIT_RETURN_IF_ERROR(out.Commit());
  rep.tokens = index;
  rep.seconds = MonotonicSeconds() - t0;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

}  // namespace lmkit::bpe
