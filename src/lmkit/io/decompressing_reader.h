// One input file read as a byte stream, decompressed when its first bytes are a gzip or zstd magic number.
//
// Contract: Open reads "-" as stdin, refuses a directory (kInvalidInput), and detects the compression from the magic
// bytes (1f 8b: gzip, 28 b5 2f fd: zstd), never from the name. Decompression streams with bounded memory (1 MiB of
// buffers plus the decoder's window: 32 KiB for gzip, up to 128 MiB for zstd frames made with --long); concatenated
// gzip members and zstd frames read as one stream, as gzip -d and zstd -d do. Errors name the file (subject = path,
// "<stdin>" for stdin): a stream that ends inside a member or frame is "truncated gzip stream ..." / "truncated zstd
// stream ...", damaged data "corrupt gzip data: ..." / "corrupt zstd data: ...", bytes after the last gzip member that
// are not another member "trailing data after the gzip stream". Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"
#include "lmkit/io/byte_source.h"

namespace lmkit::io {

enum class Compression { kNone, kGzip, kZstd };

std::string_view CompressionName(Compression c);  // none | gzip | zstd
// From the first bytes of a stream (fewer than 4 bytes: kNone unless they are a gzip magic).
Compression DetectCompression(std::string_view head);

class DecompressingReader final : public ByteSource {
 public:
  static Result<std::unique_ptr<DecompressingReader>> Open(const std::string& path);
  ~DecompressingReader() override;

  Result<size_t> Read(char* dst, size_t capacity) override;
  // The file size of an uncompressed regular file, else 0.
  uint64_t SizeHint() const override;

  Compression compression() const { return compression_; }
  // Decompressed bytes consumed so far (by Read and Seek).
  uint64_t position() const { return position_; }
  // Moves to decompressed offset `pos` (or to the end when the stream is shorter): forward by lseek in an uncompressed
  // regular file, else by decompressing and discarding; backward by reopening the file. Errors: those of reading, and
  // kInvalidArgument for a backward move on stdin or a pipe.
  Status Seek(uint64_t pos);
  const std::string& path() const { return path_; }

 private:
  DecompressingReader() = default;
  Status Reopen();
  Status FillInput();
  // One read(2) of up to `capacity` bytes (retried on EINTR); 0 sets in_eof_.
  Result<size_t> ReadSome(char* dst, size_t capacity);
  Result<size_t> ReadGzip(char* dst, size_t capacity);
  Result<size_t> ReadZstd(char* dst, size_t capacity);

  struct Codec;
  std::string path_;
  std::string subject_;  // path, or "<stdin>"
  int fd_ = -1;
  bool regular_ = false;
  uint64_t file_size_ = 0;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<char[]> in_;  // compressed input (or the sniffed head of an uncompressed stream)
  size_t in_pos_ = 0, in_len_ = 0;
  bool in_eof_ = false;
  uint64_t in_consumed_ = 0;  // compressed bytes read from the file, for messages
  uint64_t position_ = 0;
  bool done_ = false;  // the decoder reached the end of the last member/frame, or a previous error
  std::unique_ptr<Codec> codec_;
};

}  // namespace lmkit::io
