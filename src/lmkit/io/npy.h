// NumPy .npy files: a validating zero-copy reader, a whole-array writer and a streaming 1-D writer.
//
// Format (docs/formats.md, numpy's format.py / NEP 1): magic "\x93NUMPY", major version 1, 2 or 3, minor 0; header
// length (v1: 2 bytes, v2/v3: 4 bytes, little-endian); an ASCII (v3: UTF-8) Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and ending in '\n'; then the data.
//
// Reader contract: Parse/Open check the magic, version, that the header lies inside the file, and parse the dict
// strictly (exactly the three keys, each once; Python string/bool/tuple syntax; shape entries non-negative integers
// whose product times the element size fits 64 bits), and that the file holds exactly the data the header announces.
// descr: '<' or '=' byte order for multi-byte types, '<', '=' or '|' for one-byte ones, one of b1 u1 i1 i2 u2 f2 i4 u4
// f4 i8 u8 f8. Errors: big-endian ('>') or fortran_order True or another element type (complex, strings, records ...)
// -> kUnsupported naming it; anything malformed -> kInvalidInput naming the defect; subject = the path. Views point
// into the caller's buffer (Parse) or the reader's memory map (Open). Immutable, thread-safe for reads.
//
// Writer contract: WriteNpy writes a v1 header (v2 only when the dict needs more than 65535 bytes) padded with spaces
// so the data starts at a multiple of 64 bytes, through AtomicFile. NpyStreamWriter writes a 1-D array whose length is
// unknown up front: it reserves a fixed-size header, appends elements, and on Commit rewrites the header with the final
// length (AtomicFile::WriteAt), so readers always see a consistent file. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/status.h"
#include "lmkit/io/dtype.h"

namespace lmkit::io {

// '<f4' etc. for the dtypes .npy can hold; nullopt for BF16 and the F8 types (numpy has no such dtype).
std::optional<std::string_view> NpyDescr(DType t);

struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::kF32;
  std::string descr;            // as written in the file, e.g. "<f4"
  std::vector<uint64_t> shape;  // empty = 0-d (one element)
  uint64_t data_offset = 0;     // bytes from the start of the file to the data
  uint64_t num_elements() const;
  uint64_t num_bytes() const { return num_elements() * DTypeSize(dtype); }
};

// Parses and validates the header at the start of `file` (which must be the whole file: its size is checked against
// the data the header announces). `subject` names it in errors.
Result<NpyHeader> ParseNpyHeader(std::span<const uint8_t> file, const std::string& subject);

class NpyFile {
 public:
  static Result<NpyFile> Open(const std::string& path);
  // `file` must outlive the result.
  static Result<NpyFile> Parse(std::span<const uint8_t> file, const std::string& subject);

  NpyFile() = default;
  NpyFile(NpyFile&&) noexcept = default;
  NpyFile& operator=(NpyFile&&) noexcept = default;

  const NpyHeader& header() const { return header_; }
  DType dtype() const { return header_.dtype; }
  const std::vector<uint64_t>& shape() const { return header_.shape; }
  // The data, C order, little-endian (aligned to 16 at least in numpy-written files, but do not rely on it).
  std::span<const uint8_t> data() const { return data_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  MappedFile map_;
  NpyHeader header_;
  std::span<const uint8_t> data_;
};

// The header block (magic .. '\n') WriteNpy emits; its length is a multiple of 64. kUnsupported for dtypes .npy
// cannot hold.
Result<std::string> EncodeNpyHeader(DType dtype, const std::vector<uint64_t>& shape);

// Writes a whole array. kInvalidInput when data.size() != elements x dtype size.
Status WriteNpy(const std::string& path, DType dtype, const std::vector<uint64_t>& shape,
                std::span<const uint8_t> data);

class NpyStreamWriter {
 public:
  static Result<NpyStreamWriter> Create(const std::string& path, DType dtype);

  NpyStreamWriter() = default;
  NpyStreamWriter(NpyStreamWriter&&) noexcept = default;
  NpyStreamWriter& operator=(NpyStreamWriter&&) noexcept = default;

  // Appends whole elements (size must be a multiple of the element size, else kInvalidInput).
  Status Write(const void* data, size_t size);
  // Patches the shape to (elements_written,) and renames into place.
  Status Commit();
  uint64_t elements_written() const { return elements_; }
  const std::string& path() const { return out_.path(); }

 private:
  AtomicFile out_;
  DType dtype_ = DType::kU8;
  uint64_t header_len_ = 0;
  uint64_t elements_ = 0;
};

}  // namespace lmkit::io
