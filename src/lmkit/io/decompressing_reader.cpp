// Decoding goes straight into the caller's buffer (no second copy of the decompressed bytes); the compressed side is
// read in 256 KiB blocks. Uncompressed files are read with read(2) into the caller's buffer after the sniffed head.
#include "lmkit/io/decompressing_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

namespace lmkit::io {

namespace {

constexpr size_t kInBytes = size_t{256} << 10;

bool IsGzipMagic(const char* p) {
  return static_cast<unsigned char>(p[0]) == 0x1f && static_cast<unsigned char>(p[1]) == 0x8b;
}

}  // namespace

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "none";
}

Compression DetectCompression(std::string_view head) {
  if (head.size() >= 2 && IsGzipMagic(head.data())) return Compression::kGzip;
  if (head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x28 && static_cast<unsigned char>(head[1]) == 0xb5 &&
      static_cast<unsigned char>(head[2]) == 0x2f && static_cast<unsigned char>(head[3]) == 0xfd)
    return Compression::kZstd;
  return Compression::kNone;
}

struct DecompressingReader::Codec {
  z_stream z{};
  bool z_ready = false;
  bool member_done = false;  // gzip: the current member ended; the next bytes are another member or the end
  ZSTD_DCtx* zs = nullptr;
  size_t zstd_hint = 0;  // the last return of ZSTD_decompressStream: 0 when a frame is complete
  ~Codec() {
    if (z_ready) inflateEnd(&z);
    if (zs) ZSTD_freeDCtx(zs);
  }
};

Result<std::unique_ptr<DecompressingReader>> DecompressingReader::Open(const std::string& path) {
  std::unique_ptr<DecompressingReader> r(new DecompressingReader());
  r->path_ = path;
  r->subject_ = path == "-" ? "<stdin>" : path;
  r->in_.reset(new char[kInBytes]);
  LMKIT_RETURN_IF_ERROR(r->Reopen());
  return r;
}

DecompressingReader::~DecompressingReader() {
  if (fd_ > 0) ::close(fd_);
}

Status DecompressingReader::Reopen() {
  if (fd_ > 0) ::close(fd_);
  fd_ = -1;
  if (path_ == "-") {
    if (position_ > 0 || in_consumed_ > 0) return Status::InvalidArgument("stdin cannot be read twice");
    fd_ = 0;
  } else {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      if (errno == ENOENT) return Status::NotFound(path_, "no such file");
      return Status::FromErrno(path_, "cannot open", errno);
    }
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Status::FromErrno(subject_, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) return Status::InvalidInput(subject_, "is a directory, expected a file");
  regular_ = S_ISREG(st.st_mode);
  file_size_ = regular_ ? static_cast<uint64_t>(st.st_size) : 0;
  if (regular_) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  in_pos_ = in_len_ = 0;
  in_eof_ = false;
  in_consumed_ = 0;
  position_ = 0;
  done_ = false;
  while (in_len_ < 4 && !in_eof_) LMKIT_RETURN_IF_ERROR(FillInput());
  compression_ = DetectCompression(std::string_view(in_.get(), in_len_));
  codec_ = std::make_unique<Codec>();
  if (compression_ == Compression::kGzip) {
    if (inflateInit2(&codec_->z, 15 + 16) != Z_OK) return Status::Internal("zlib: inflateInit2 failed");
    codec_->z_ready = true;
  } else if (compression_ == Compression::kZstd) {
    codec_->zs = ZSTD_createDCtx();
    if (!codec_->zs) return Status::Internal("zstd: cannot create a decompression context");
  }
  return Status::Ok();
}

Status DecompressingReader::FillInput() {
  if (in_pos_ == in_len_) {
    in_pos_ = in_len_ = 0;
  } else if (in_pos_ > 0) {
    std::memmove(in_.get(), in_.get() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == kInBytes) return Status::Ok();
  // One read per fill: a pipe gives what it has.
  LMKIT_ASSIGN_OR_RETURN(size_t n, ReadSome(in_.get() + in_len_, kInBytes - in_len_));
  in_len_ += n;
  in_consumed_ += n;
  return Status::Ok();
}

Result<size_t> DecompressingReader::ReadSome(char* dst, size_t capacity) {
  for (;;) {
    const ssize_t r = ::read(fd_, dst, capacity);
    if (r > 0) return static_cast<size_t>(r);
    if (r == 0) {
      in_eof_ = true;
      return size_t{0};
    }
    if (errno != EINTR) return Status::FromErrno(subject_, "cannot read", errno);
  }
}

uint64_t DecompressingReader::SizeHint() const { return compression_ == Compression::kNone ? file_size_ : 0; }

Result<size_t> DecompressingReader::Read(char* dst, size_t capacity) {
  if (capacity == 0 || done_) return size_t{0};
  size_t got = 0;
  if (compression_ == Compression::kGzip) {
    LMKIT_ASSIGN_OR_RETURN(got, ReadGzip(dst, capacity));
  } else if (compression_ == Compression::kZstd) {
    LMKIT_ASSIGN_OR_RETURN(got, ReadZstd(dst, capacity));
  } else {
    if (in_pos_ < in_len_) {  // the sniffed head first
      got = std::min(capacity, in_len_ - in_pos_);
      std::memcpy(dst, in_.get() + in_pos_, got);
      in_pos_ += got;
    }
    while (got < capacity && !in_eof_) {
      LMKIT_ASSIGN_OR_RETURN(size_t n, ReadSome(dst + got, capacity - got));
      got += n;
    }
  }
  position_ += got;
  return got;
}

Result<size_t> DecompressingReader::ReadGzip(char* dst, size_t capacity) {
  Codec& c = *codec_;
  size_t got = 0;
  while (got < capacity && !done_) {
    if (c.member_done) {
      // Another member follows (pigz, `cat a.gz b.gz`), or nothing.
      if (in_len_ - in_pos_ < 2 && !in_eof_) {
        LMKIT_RETURN_IF_ERROR(FillInput());
        continue;
      }
      if (in_pos_ == in_len_) {
        done_ = true;
        break;
      }
      if (in_len_ - in_pos_ < 2 || !IsGzipMagic(in_.get() + in_pos_)) {
        done_ = true;
        return Status::InvalidInput(subject_, "trailing data after the gzip stream");
      }
      inflateReset(&c.z);
      c.member_done = false;
    }
    if (in_pos_ == in_len_) {
      if (in_eof_) {
        done_ = true;
        return Status::InvalidInput(subject_, "truncated gzip stream (it ends after " + std::to_string(in_consumed_) +
                                                  " compressed bytes; an interrupted download or copy?)");
      }
      LMKIT_RETURN_IF_ERROR(FillInput());
      continue;
    }
    c.z.next_in = reinterpret_cast<Bytef*>(in_.get() + in_pos_);
    c.z.avail_in = static_cast<uInt>(in_len_ - in_pos_);
    c.z.next_out = reinterpret_cast<Bytef*>(dst + got);
    c.z.avail_out = static_cast<uInt>(std::min<size_t>(capacity - got, UINT_MAX));
    const uInt out_before = c.z.avail_out;
    const int rc = inflate(&c.z, Z_NO_FLUSH);
    in_pos_ = in_len_ - c.z.avail_in;
    got += out_before - c.z.avail_out;
    if (rc == Z_STREAM_END) {
      c.member_done = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      done_ = true;
      return Status::InvalidInput(subject_,
                                  std::string("corrupt gzip data: ") + (c.z.msg ? c.z.msg : "inflate failed"));
    }
  }
  return got;
}

Result<size_t> DecompressingReader::ReadZstd(char* dst, size_t capacity) {
  Codec& c = *codec_;
  size_t got = 0;
  while (got < capacity && !done_) {
    if (in_pos_ == in_len_) {
      if (in_eof_) {
        done_ = true;
        if (c.zstd_hint != 0)
          return Status::InvalidInput(subject_,
                                      "truncated zstd stream (it ends after " + std::to_string(in_consumed_) +
                                          " compressed bytes inside a frame; an interrupted download or copy?)");
        break;
      }
      LMKIT_RETURN_IF_ERROR(FillInput());
      continue;
    }
    ZSTD_inBuffer in{in_.get(), in_len_, in_pos_};
    ZSTD_outBuffer out{dst, capacity, got};
    const size_t r = ZSTD_decompressStream(c.zs, &out, &in);
    if (ZSTD_isError(r)) {
      done_ = true;
      return Status::InvalidInput(subject_, std::string("corrupt zstd data: ") + ZSTD_getErrorName(r));
    }
    in_pos_ = in.pos;
    got = out.pos;
    c.zstd_hint = r;
  }
  return got;
}

Status DecompressingReader::Seek(uint64_t pos) {
  if (pos < position_) {
    if (!regular_) return Status::InvalidArgument("cannot go back in " + subject_ + ": it is not a regular file");
    LMKIT_RETURN_IF_ERROR(Reopen());
  }
  if (pos == position_) return Status::Ok();
  if (compression_ == Compression::kNone && regular_) {
    const uint64_t to = std::min(pos, file_size_);
    if (::lseek(fd_, static_cast<off_t>(to), SEEK_SET) < 0) return Status::FromErrno(subject_, "cannot seek", errno);
    in_pos_ = in_len_ = 0;
    in_eof_ = false;
    position_ = to;
    return Status::Ok();
  }
  std::unique_ptr<char[]> scratch(new char[kInBytes]);
  while (position_ < pos) {
    LMKIT_ASSIGN_OR_RETURN(size_t n,
                           Read(scratch.get(), static_cast<size_t>(std::min<uint64_t>(kInBytes, pos - position_))));
    if (n == 0) break;
  }
  return Status::Ok();
}

}  // namespace lmkit::io
