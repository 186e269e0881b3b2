#include "lmkit/dataload/token_shards.h"

#include <sys/stat.h>

#include <cerrno>

namespace lmkit::dataload {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char* TokenDtypeName(unsigned token_bytes) { return token_bytes == 4 ? "uint32" : "uint16"; }

Result<std::vector<TokenShard>> OpenTokenShards(const std::vector<std::string>& paths, TokenDtype dtype,
                                                uint64_t vocab_size) {
  if (paths.empty()) return Status::Usage("no token files given");
  std::vector<TokenShard> shards;
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      int e = errno;
      if (e == ENOENT) return Status::NotFound(path, "no such file");
      return Status::FromErrno(path, "cannot stat", e);
    }
    if (!S_ISREG(st.st_mode)) return Status::InvalidInput(path, "not a regular file");
    TokenShard s;
    s.path = path;
    s.file_bytes = static_cast<uint64_t>(st.st_size);
    if (EndsWith(path, ".npy")) {
      return Status::Unsupported(path, ".npy token files need lmkit/io's npy reader, not merged into this build yet");
    }
    unsigned bytes = 2;
    if (dtype == TokenDtype::kUint32 || (dtype == TokenDtype::kAuto && vocab_size > 65536)) bytes = 4;
    s.token_bytes = bytes;
    s.data_offset = 0;
    if (s.file_bytes % bytes != 0) {
      return Status::InvalidInput(path, "size " + std::to_string(s.file_bytes) + " bytes is not a multiple of " +
                                            std::to_string(bytes) + " (" + TokenDtypeName(bytes) + " tokens)");
    }
    s.tokens = s.file_bytes / bytes;
    shards.push_back(std::move(s));
  }
  for (const auto& s : shards) {
    if (s.token_bytes != shards[0].token_bytes) {
      return Status::InvalidInput(s.path, std::string("holds ") + TokenDtypeName(s.token_bytes) + " tokens but " +
                                              shards[0].path + " holds " + TokenDtypeName(shards[0].token_bytes));
    }
    if (s.token_bytes == 2 && vocab_size > 65536) {
      return Status::Usage("--vocab-size " + std::to_string(vocab_size) + " does not fit uint16 tokens (" + s.path +
                           "); use --dtype uint32");
    }
  }
  return shards;
}

}  // namespace lmkit::dataload
