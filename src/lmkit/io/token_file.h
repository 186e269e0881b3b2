// Token id files as nanoGPT and CS336 use them: a flat array of uint16 or uint32 ids, either headerless little-endian
// (".bin", dtype given by the caller) or a 1-D .npy array (dtype u2 or u4 from its header).
//
// Reader contract: TokenFile::Open maps the file; the ids are read in place, never copied (a .npy whose data offset is
// not a multiple of the id size, which numpy never writes, is the one exception: it is copied once into an aligned
// buffer). Errors: kInvalidInput for a .bin whose size is not a multiple of the id size, a .npy that is not 1-D
// (a 2-D array is accepted and flattened), or one whose dtype is not uint16/uint32 ("token .npy must be uint16 or
// uint32, got '<i8'"); kInvalidArgument when a .bin's dtype is kAuto. Immutable, thread-safe for reads.
//
// Writer contract: TokenWriter appends ids (given as uint32) and stores them as uint16 or uint32, in .bin or .npy,
// through AtomicFile (nothing at the destination until Commit). An id that does not fit uint16 is kInvalidInput
// ("token id 70000 does not fit uint16"), and nothing is written for that call. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/mapped_file.h"
#include "lmkit/common/status.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::io {

enum class TokenFormat { kBin, kNpy };

// ".npy" (case-sensitive suffix) -> kNpy, anything else -> kBin.
TokenFormat TokenFormatFromPath(const std::string& path);

class TokenFile {
 public:
  // `bin_dtype` is used for .bin files only (kU16 or kU32); .npy files carry their own.
  static Result<TokenFile> Open(const std::string& path, TokenDtype bin_dtype = TokenDtype::kU16);

  TokenFile() = default;
  TokenFile(TokenFile&&) noexcept = default;
  TokenFile& operator=(TokenFile&&) noexcept = default;

  TokenDtype dtype() const { return dtype_; }  // kU16 or kU32
  TokenFormat format() const { return format_; }
  uint64_t size() const { return count_; }  // number of ids
  // The ids; exactly one of these is non-empty (the one matching dtype()), unless size() == 0.
  std::span<const uint16_t> u16() const;
  std::span<const uint32_t> u32() const;
  // Raw bytes of the ids (little-endian).
  std::span<const uint8_t> bytes() const { return {data_, count_ * TokenDtypeBytes(dtype_)}; }
  // Id at i (no bounds check beyond an assert).
  uint32_t operator[](uint64_t i) const {
    return dtype_ == TokenDtype::kU16 ? reinterpret_cast<const uint16_t*>(data_)[i]
                                      : reinterpret_cast<const uint32_t*>(data_)[i];
  }
  const std::string& path() const { return path_; }
  const MappedFile& mapped() const { return map_; }  // for madvise / page-cache work in dataload

 private:
  std::string path_;
  MappedFile map_;
  std::vector<uint8_t> copy_;  // only for a misaligned .npy
  const uint8_t* data_ = nullptr;
  uint64_t count_ = 0;
  TokenDtype dtype_ = TokenDtype::kU16;
  TokenFormat format_ = TokenFormat::kBin;
};

class TokenWriter {
 public:
  // dtype: kU16 or kU32 (kAuto: kInvalidArgument).
  static Result<TokenWriter> Create(const std::string& path, TokenFormat format, TokenDtype dtype);

  TokenWriter();
  TokenWriter(TokenWriter&&) noexcept;
  TokenWriter& operator=(TokenWriter&&) noexcept;
  ~TokenWriter();

  // Errors: kInvalidInput naming the file when an id does not fit a uint16 output (nothing of that call is written).
  Status Append(std::span<const uint32_t> ids);
  // Ids that already fit uint16 (written as they are to a uint16 output, widened for a uint32 one).
  Status Append16(std::span<const uint16_t> ids);
  Status Commit();
  uint64_t count() const { return count_; }

 private:
  Status WriteRaw(const void* data, size_t bytes, size_t ids);
  const std::string& Path() const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TokenDtype dtype_ = TokenDtype::kU16;
  uint64_t count_ = 0;
  std::vector<uint16_t> narrow_;  // scratch for uint16 output
  std::vector<uint32_t> wide_;    // scratch for uint16 ids into a uint32 output
};

}  // namespace lmkit::io
