// The outputs ids are written to: a file (atomically) or a descriptor, in one of the id formats (id_format.h).
//
// Contract: ByteOutput writes bytes to an AtomicFile (renamed into place by Commit) or to a descriptor such as stdout
// (not owned; buffered, flushed by Commit). OpenIdOutput opens request.output (or request.stdout_fd when it is empty)
// for `format` and `dtype` exactly as EncodeFile does, so ids written there give the same bytes; Write the ids in
// order, then Commit once. Errors: kIo naming the file; kInvalidArgument (Field("format")) for npy without a file
// (its header needs the count). Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/bpe/encode/token_sink.h"
#include "lmkit/bpe/files/id_format.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

class ByteOutput {
 public:
  static Result<ByteOutput> ToFile(const std::string& path);
  static ByteOutput ToFd(int fd, std::string name);
  Status Write(std::string_view bytes);
  Status Commit();  // flushes; renames a file into place
  const std::string& name() const { return name_; }

 private:
  std::optional<AtomicFile> file_;
  int fd_ = -1;
  std::string name_;
  std::string buffer_;
};

class IdOutput : public TokenSink {
 public:
  virtual Status Commit() = 0;
};

// The request's output can take `format`: kInvalidArgument (Field("format")) for npy without a file, else Ok.
Status CheckIdOutput(const EncodeRequest& request, IdFormat format);
Result<std::unique_ptr<IdOutput>> OpenIdOutput(const EncodeRequest& request, const Tokenizer& tokenizer,
                                               IdFormat format, IdDtype dtype);

}  // namespace lmkit::bpe
