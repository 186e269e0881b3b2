#include "lmkit/bpe/encode/id_output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "lmkit/io/token_file.h"

namespace lmkit::bpe {

Result<ByteOutput> ByteOutput::ToFile(const std::string& path) {
  ByteOutput o;
  LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path));
  o.file_.emplace(std::move(f));
  o.name_ = path;
  return o;
}

ByteOutput ByteOutput::ToFd(int fd, std::string name) {
  ByteOutput o;
  o.fd_ = fd;
  o.name_ = std::move(name);
  return o;
}

Status ByteOutput::Write(std::string_view bytes) {
  if (file_) return file_->Write(bytes);
  buffer_.append(bytes);
  if (buffer_.size() < (size_t{1} << 20)) return Status::Ok();
  return Commit();
}

Status ByteOutput::Commit() {
  if (file_) return file_->Commit();
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(name_, "write failed", errno);  // docs/cli.md: "<command>: stdout: write failed: ..."
    }
    done += static_cast<size_t>(w);
  }
  buffer_.clear();
  return Status::Ok();
}

namespace {

class TokenWriterSink final : public TokenSink {
 public:
  explicit TokenWriterSink(io::TokenWriter w) : w_(std::move(w)) {}
  Status Write(const uint32_t* ids, size_t count) override { return w_.Append({ids, count}); }
  Status Write16(const uint16_t* ids, size_t count) override { return w_.Append16({ids, count}); }
  Status Commit() { return w_.Commit(); }

 private:
  io::TokenWriter w_;
};

// bin, json or text into a ByteOutput.
class FormattedSink final : public TokenSink {
 public:
  FormattedSink(ByteOutput out, IdFormat format, IdDtype dtype, const Tokenizer& tok)
      : out_(std::move(out)), format_(format), dtype_(dtype), tok_(tok) {}
  Status Write(const uint32_t* ids, size_t count) override {
    buf_.clear();
    char num[16];
    for (size_t i = 0; i < count; ++i) {
      const uint32_t id = ids[i];
      switch (format_) {
        case IdFormat::kBin:
          if (dtype_ == IdDtype::kU16) {
            const uint16_t v = static_cast<uint16_t>(id);
            buf_.append(reinterpret_cast<const char*>(&v), 2);
          } else {
            buf_.append(reinterpret_cast<const char*>(&id), 4);
          }
          break;
        case IdFormat::kJson: {
          buf_ += first_ ? '[' : ',';
          int n = std::snprintf(num, sizeof(num), "%u", id);
          buf_.append(num, static_cast<size_t>(n));
          break;
        }
        default: {
          int n = std::snprintf(num, sizeof(num), "%u\t", id);
          buf_.append(num, static_cast<size_t>(n));
          std::string_view bytes;
          if (!tok_.TokenBytes(id, &bytes)) bytes = {};
          buf_ += QuoteTokenBytes(bytes);
          buf_ += '\n';
        }
      }
      first_ = false;
    }
    return out_.Write(buf_);
  }
  Status Commit() {
    if (format_ == IdFormat::kJson) LMKIT_RETURN_IF_ERROR(out_.Write(first_ ? "[]\n" : "]\n"));
    return out_.Commit();
  }

 private:
  ByteOutput out_;
  IdFormat format_;
  IdDtype dtype_;
  const Tokenizer& tok_;
  std::string buf_;
  bool first_ = true;
};

}  // namespace

// The sinks above behind one interface.

namespace {

template <typename S>
class OwnedIdOutput final : public IdOutput {
 public:
  explicit OwnedIdOutput(S sink) : sink_(std::move(sink)) {}
  Status Write(const uint32_t* ids, size_t count) override { return sink_.Write(ids, count); }
  Status Write16(const uint16_t* ids, size_t count) override { return sink_.Write16(ids, count); }
  Status Commit() override { return sink_.Commit(); }

 private:
  S sink_;
};

}  // namespace

Status CheckIdOutput(const EncodeRequest& req, IdFormat format) {
  if (format == IdFormat::kNpy && req.output.empty())
    return Status::InvalidArgument(Field("format") + " npy needs an output file (" + Field("output") +
                                   "): its header holds the token count");
  return Status::Ok();
}

Result<std::unique_ptr<IdOutput>> OpenIdOutput(const EncodeRequest& req, const Tokenizer& tok, IdFormat format,
                                               IdDtype dtype) {
  if ((format == IdFormat::kBin || format == IdFormat::kNpy) && !req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(
        io::TokenWriter w,
        io::TokenWriter::Create(req.output, format == IdFormat::kNpy ? io::TokenFormat::kNpy : io::TokenFormat::kBin,
                                dtype));
    return std::unique_ptr<IdOutput>(new OwnedIdOutput<TokenWriterSink>(TokenWriterSink(std::move(w))));
  }
  LMKIT_RETURN_IF_ERROR(CheckIdOutput(req, format));
  ByteOutput out = ByteOutput::ToFd(req.stdout_fd, "stdout");
  if (!req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(out, ByteOutput::ToFile(req.output));
  }
  return std::unique_ptr<IdOutput>(new OwnedIdOutput<FormattedSink>(FormattedSink(std::move(out), format, dtype, tok)));
}

}  // namespace lmkit::bpe
