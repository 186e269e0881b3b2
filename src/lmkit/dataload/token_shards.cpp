#include "lmkit/dataload/token_shards.h"

#include <sys/stat.h>

#include <cerrno>
#include <span>

#include "lmkit/io/npy.h"
#include "lmkit/io/token_file.h"

namespace lmkit::dataload {
namespace {}  // namespace

const char* TokenDtypeName(unsigned token_bytes) { return token_bytes == 4 ? "uint32" : "uint16"; }

Result<std::vector<TokenShard>> OpenTokenShards(const std::vector<std::string>& paths, TokenDtype dtype,
                                                uint64_t vocab_size) {
  if (paths.empty()) return Status::InvalidArgument("no token files given");
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
    if (io::TokenFormatFromPath(path) == io::TokenFormat::kNpy) {
      // lmkit/io validates the header (1-D or 2-D, uint16/uint32, little-endian, size matches); the data offset comes
      // from the same header, because pread and O_DIRECT read the file, not the mapping.
      LMKIT_ASSIGN_OR_RETURN(io::TokenFile tf, io::TokenFile::Open(path));
      const MappedFile& m = tf.mapped();
      LMKIT_ASSIGN_OR_RETURN(io::NpyHeader h, io::ParseNpyHeader(std::span<const uint8_t>(m.data(), m.size()), path));
      s.npy = true;
      s.token_bytes = tf.dtype() == io::DType::kU32 ? 4 : 2;
      s.data_offset = h.data_offset;
      s.tokens = tf.size();
      const unsigned want = dtype == TokenDtype::kUint32 ? 4 : dtype == TokenDtype::kUint16 ? 2 : 0;
      if (want != 0 && want != s.token_bytes) {
        return Status::InvalidInput(path, std::string("holds ") + TokenDtypeName(s.token_bytes) +
                                              " tokens (from its .npy header) but --dtype is " + TokenDtypeName(want));
      }
    } else {
      unsigned bytes = 2;
      if (dtype == TokenDtype::kUint32 || (dtype == TokenDtype::kAuto && vocab_size > 65536)) bytes = 4;
      s.token_bytes = bytes;
      s.data_offset = 0;
      if (s.file_bytes % bytes != 0) {
        return Status::InvalidInput(path, "size " + std::to_string(s.file_bytes) + " bytes is not a multiple of " +
                                              std::to_string(bytes) + " (" + TokenDtypeName(bytes) + " tokens)");
      }
      s.tokens = s.file_bytes / bytes;
    }
    shards.push_back(std::move(s));
  }
  for (const auto& s : shards) {
    if (s.token_bytes != shards[0].token_bytes) {
      return Status::InvalidInput(s.path, std::string("holds ") + TokenDtypeName(s.token_bytes) + " tokens but " +
                                              shards[0].path + " holds " + TokenDtypeName(shards[0].token_bytes));
    }
    if (s.token_bytes == 2 && vocab_size > 65536) {
      return Status::InvalidArgument("--vocab-size " + std::to_string(vocab_size) + " does not fit uint16 tokens (" + s.path +
                           "); use --dtype uint32");
    }
  }
  return shards;
}

}  // namespace lmkit::dataload
