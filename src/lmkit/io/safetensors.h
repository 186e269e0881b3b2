// safetensors files: a validating zero-copy reader and a streaming writer.
//
// Format (docs/formats.md, spec in huggingface/safetensors): 8-byte little-endian header length N; N bytes of UTF-8
// JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {string: string}} (trailing spaces
// allowed); then the data buffer, offsets relative to its start.
//
// Reader contract: Parse/Open validate everything before returning, so a returned reader is safe to use without
// further checks: header length within the file and <= 100,000,000; header is a JSON object whose values are objects
// with exactly the keys dtype, shape, data_offsets (metadata: an object of strings); known dtype; shape entries are
// non-negative integers whose product times the dtype size does not overflow 64 bits; data_offsets are two integers
// with begin <= end and end - begin == elements x dtype size; sorted by begin, the tensors tile [0, buffer size)
// exactly (no gap, no overlap, nothing past the end, nothing left over); no duplicate names. Every failure is
// kInvalidInput with the file path as subject and a one-line message naming the tensor and the defect, e.g.
// "tensor 'x': data_offsets [10, 20) overlap tensor 'y' [16, 24)". Tensor data is never copied: views point into the
// caller's buffer (Parse) or into the reader's memory map (Open) and live as long as it. A reader is immutable and
// thread-safe for concurrent reads.
//
// Writer contract: the caller declares every tensor (name, dtype, shape) up front; Create computes the header (offsets
// tile the buffer in declaration order, JSON padded with spaces to a multiple of 8 so the buffer starts 8-aligned) and
// writes it; then the caller appends tensor bytes in declaration order, in as many Write calls as it likes (a tensor
// may be written in pieces, pieces may span tensor boundaries), so a checkpoint larger than RAM can be streamed; Commit
// checks that exactly the declared number of bytes arrived and renames the file into place (AtomicFile: nothing is left
// at the destination on failure or when Commit is never reached). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/status.h"
#include "lmkit/io/dtype.h"

namespace lmkit::io {

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

using Metadata = std::vector<std::pair<std::string, std::string>>;  // "__metadata__", in file order

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;  // empty = scalar (one element)
  uint64_t begin = 0;           // data_offsets, relative to the start of the data buffer
  uint64_t end = 0;

  uint64_t num_elements() const;  // product of shape (1 for a scalar); validated not to overflow
  uint64_t num_bytes() const { return end - begin; }
};

// A tensor's description plus a view of its bytes (little-endian, row-major; possibly unaligned).
struct TensorView {
  const TensorInfo* info = nullptr;
  std::span<const uint8_t> bytes;
};

class SafetensorsFile {
 public:
  // Maps `path` and validates it (errors as above; kNotFound / kIo from opening).
  static Result<SafetensorsFile> Open(const std::string& path);
  // Validates an in-memory file image. The returned object views `file` (it must outlive the result); `subject` names
  // it in errors. This is the fuzzer's entry point: it never reads outside `file`.
  static Result<SafetensorsFile> Parse(std::span<const uint8_t> file, const std::string& subject);

  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  // Tensors in data order (sorted by begin offset; equal to header order for files lmkit and HF write).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }
  // nullptr when absent.
  const TensorInfo* Find(std::string_view name) const;
  // The bytes of a tensor of this file.
  std::span<const uint8_t> Data(const TensorInfo& t) const { return {data_ + t.begin, t.num_bytes()}; }
  TensorView View(const TensorInfo& t) const { return {&t, Data(t)}; }

  uint64_t header_bytes() const { return header_bytes_; }  // N (JSON length incl. padding)
  uint64_t data_offset() const { return 8 + header_bytes_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t parameter_count() const;  // sum of num_elements
  const std::string& path() const { return path_; }
  const MappedFile& mapped() const { return map_; }  // empty when made by Parse

 private:
  std::string path_;
  MappedFile map_;
  const uint8_t* data_ = nullptr;  // start of the data buffer
  uint64_t header_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  std::vector<TensorInfo> tensors_;
  Metadata metadata_;
};

// What a writer needs to know about a tensor before its bytes.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
};

// The header block a writer emits for `tensors` (declaration order) and `metadata`: 8-byte length + JSON padded with
// spaces to a multiple of 8. Errors (kInvalidInput, subject empty): empty or duplicate names, a tensor named
// "__metadata__", size overflow. `infos` (optional) receives the offsets assigned.
Result<std::string> EncodeSafetensorsHeader(const std::vector<TensorSpec>& tensors, const Metadata& metadata,
                                            std::vector<TensorInfo>* infos = nullptr);

class SafetensorsWriter {
 public:
  // Opens the temporary output and writes the header. Errors: as EncodeSafetensorsHeader (subject = path), kIo.
  static Result<SafetensorsWriter> Create(const std::string& path, const std::vector<TensorSpec>& tensors,
                                          const Metadata& metadata = {});

  SafetensorsWriter() = default;
  SafetensorsWriter(SafetensorsWriter&&) noexcept = default;
  SafetensorsWriter& operator=(SafetensorsWriter&&) noexcept = default;

  // Appends data-buffer bytes. kInvalidInput when more bytes arrive than were declared.
  Status Write(const void* data, size_t size);
  Status Write(std::span<const uint8_t> bytes) { return Write(bytes.data(), bytes.size()); }
  // Writes tensor `index` whole; kInvalidInput unless it is the next tensor (nothing of it written yet) and `bytes`
  // has exactly its size.
  Status WriteTensor(size_t index, std::span<const uint8_t> bytes);
  // For tensors produced in parallel: the next `size` data bytes as a region of the file, counted as written at once;
  // fill it with WriteRegion (any order, any thread: the only method that may run concurrently, with itself) before
  // the next Write/Reserve/Commit. `pos` is relative to the region's start. kInvalidInput past the declared total.
  struct Region {
    const AtomicFile* file = nullptr;
    uint64_t offset = 0;  // in the file
    uint64_t size = 0;
  };
  Result<Region> Reserve(uint64_t size);
  static Status WriteRegion(const Region& region, uint64_t pos, const void* data, size_t size);
  // kInvalidInput unless every declared byte was written; then renames into place.
  Status Commit();

  const std::vector<TensorInfo>& tensors() const { return infos_; }
  uint64_t data_written() const { return written_; }
  uint64_t data_total() const { return total_; }
  // Index of the tensor the next byte belongs to (tensors().size() when all bytes are in).
  size_t current_tensor() const;

 private:
  AtomicFile out_;
  std::vector<TensorInfo> infos_;
  uint64_t written_ = 0;
  uint64_t total_ = 0;
};

// A tensor held in memory by the caller, for WriteSafetensors.
struct TensorData {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  std::span<const uint8_t> bytes;  // must be exactly elements x dtype size
};

// Writes a whole file from memory (declaration order = data order).
Status WriteSafetensors(const std::string& path, const std::vector<TensorData>& tensors, const Metadata& metadata = {});

}  // namespace lmkit::io
