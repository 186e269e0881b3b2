#include "lmkit/dataload/token_shards.h"

#include <sys/stat.h>

#include <cerrno>
#include <span>

#include "lmkit/io/npy.h"
#include "lmkit/io/token_file.h"

namespace lmkit::dataload {
namespace {

std::string NameOfBytes(unsigned token_bytes) {
  return std::string(io::TokenDtypeName(io::TokenDtypeOfBytes(token_bytes)));
}

}  // namespace

Result<std::vector<TokenShard>> OpenTokenShards(const std::vector<std::string>& paths, io::TokenDtype dtype,
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
      s.token_bytes = io::TokenDtypeBytes(tf.dtype());
      s.data_offset = h.data_offset;
      s.tokens = tf.size();
      const unsigned want = io::TokenDtypeBytes(dtype);
      if (want != 0 && want != s.token_bytes) {
        return Status::InvalidInput(path, "holds " + NameOfBytes(s.token_bytes) +
                                              " tokens (from its .npy header) but " + Field("dtype") + " is " +
                                              NameOfBytes(want));
      }
    } else {
      const unsigned bytes = io::TokenDtypeBytes(io::ResolveAuto(dtype, vocab_size));
      s.token_bytes = bytes;
      s.data_offset = 0;
      if (s.file_bytes % bytes != 0) {
        return Status::InvalidInput(path, "size " + std::to_string(s.file_bytes) + " bytes is not a multiple of " +
                                              std::to_string(bytes) + " (" + NameOfBytes(bytes) + " tokens)");
      }
      s.tokens = s.file_bytes / bytes;
    }
    shards.push_back(std::move(s));
  }
  for (const auto& s : shards) {
    if (s.token_bytes != shards[0].token_bytes) {
      return Status::InvalidInput(s.path, "holds " + NameOfBytes(s.token_bytes) + " tokens but " + shards[0].path +
                                              " holds " + NameOfBytes(shards[0].token_bytes));
    }
    if (s.token_bytes == 2 && vocab_size > 65536) {
      return Status::InvalidArgument(Field("vocab_size") + " " + std::to_string(vocab_size) +
                                     " does not fit uint16 tokens (" + s.path + "); use " + Field("dtype") + " uint32");
    }
  }
  return shards;
}

}  // namespace lmkit::dataload
