#include "lmkit/bpe/encode_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "lmkit/bpe/encode_stream.h"
#include "lmkit/bpe/id_output.h"
#include "lmkit/common/sysinfo.h"

namespace lmkit::bpe {

Result<EncodeReport> EncodeFile(const EncodeRequest& req, ProgressSink* progress) {
  EncodeReport rep;
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(auto tok, LoadTokenizer(req.tokenizer, req.tokenizer_options));
  rep.load_seconds = MonotonicSeconds() - t0;
  rep.tokenizer = tok->description();
  rep.input = req.input;
  rep.output = req.output.empty() ? "-" : req.output;
  rep.format = req.format.value_or(req.output.empty() ? IdFormat::kJson : IdFormatFromPath(req.output));
  LMKIT_ASSIGN_OR_RETURN(SpecialRules rules, SpecialRules::Resolve(*tok, req.specials));
  LMKIT_ASSIGN_OR_RETURN(rep.dtype, ResolveDtype(req.dtype, *tok));
  rep.threads = std::max(1u, req.threads);
  LMKIT_RETURN_IF_ERROR(CheckIdOutput(req, rep.format));
  int fd = 0;
  uint64_t size_hint = 0;
  if (req.input != "-") {
    fd = ::open(req.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(req.input, "no such file");
      return Status::FromErrno(req.input, "cannot open", errno);
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return Status::InvalidInput(req.input, "is a directory, expected a text file");
      }
      size_hint = static_cast<uint64_t>(st.st_size);
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd > 0) ::close(fd);
    }
  } closer{fd};
  const std::string source_name = req.input == "-" ? "<stdin>" : req.input;
  FdSource source(fd, source_name, size_hint);
  StreamOptions opts;
  opts.threads = rep.threads;
  opts.chunk_bytes = req.chunk_bytes;
  opts.specials = &rules;

  auto cpu_now = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  const double t1 = MonotonicSeconds();
  const double c1 = cpu_now();
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<IdOutput> out, OpenIdOutput(req, *tok, rep.format, rep.dtype));
  Result<StreamStats> streamed = EncodeStream(*tok, source, *out, opts, progress);
  // Errors found in the text (a disallowed special) name no file: this is the input they are in.
  if (!streamed.ok()) return streamed.status().WithSubject(source_name);
  LMKIT_RETURN_IF_ERROR(out->Commit());
  const StreamStats& stats = *streamed;
  rep.encode_seconds = MonotonicSeconds() - t1;
  rep.encode_cpu_seconds = cpu_now() - c1;
  rep.bytes = stats.bytes;
  rep.tokens = stats.tokens;
  rep.chunks = stats.chunks;
  rep.largest_chunk = stats.largest_chunk;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

}  // namespace lmkit::bpe
