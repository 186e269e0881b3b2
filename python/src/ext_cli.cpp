// The command layer in-process: lmkit.flops(...), lmkit.quantize(...) and the other report functions run the same
// command line the lmkit binary would (commands/run_cli.cpp) and return its --json document. Output is captured, not
// written to the process's stdout/stderr.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <stdio.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "command.h"
#include "ext.h"

namespace lmkit::py {
namespace {

// A FILE* over a growing memory buffer (POSIX open_memstream); the text is read after Close().
class MemoryStream {
 public:
  MemoryStream() : file_(::open_memstream(&data_, &size_)) {}
  ~MemoryStream() {
    Close();
    std::free(data_);
  }
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;
  FILE* file() const { return file_; }
  std::string Close() {
    if (file_ != nullptr) {
      std::fclose(file_);
      file_ = nullptr;
    }
    return data_ != nullptr ? std::string(data_, size_) : std::string();
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  FILE* file_ = nullptr;
};

// The command layer keeps process-wide state (the capture streams, the last error): one command line at a time.
std::mutex cli_mutex;

// The Status a failed command line reported, rebuilt from its code and its last stderr line, for Raise (the one
// mapping of error codes to Python exceptions). A command-line parse error reports no Status: it is an argument error.
Status FailureOf(ErrorCode code, int rc, const std::string& err) {
  std::string line = err;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  line = line.substr(line.rfind('\n') == std::string::npos ? 0 : line.rfind('\n') + 1);
  if (line.empty()) line = "lmkit exited with status " + std::to_string(rc);
  switch (code) {
    case ErrorCode::kIo:
      return Status::Io("", line);
    case ErrorCode::kNotFound:
      return Status::NotFound("", line);
    case ErrorCode::kCancelled:
      return Status::Cancelled(line);
    case ErrorCode::kInternal:
      return Status::Internal(line);
    default:
      return Status::InvalidArgument(line);
  }
}

// (exit code, stdout bytes, stderr text). With `check`, a non-zero exit raises instead (see Raise). The GIL is
// released while the command runs.
std::tuple<int, nb::bytes, std::string> RunCli(const std::vector<std::string>& args, bool check) {
  std::string out, err;
  int rc = 0;
  ErrorCode code = ErrorCode::kOk;
  bool streams_ok = true;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cli_mutex);
    MemoryStream out_stream, err_stream;
    streams_ok = out_stream.file() != nullptr && err_stream.file() != nullptr;
    if (streams_ok) {
      std::vector<std::string> argv_text = {"lmkit"};
      argv_text.insert(argv_text.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_text) argv.push_back(a.data());
      argv.push_back(nullptr);
      cli::ResetCliState();
      {
        cli::ScopedCliStreams streams(out_stream.file(), err_stream.file());
        rc = cli::RunCli(static_cast<int>(argv_text.size()), argv.data(), /*standalone=*/false);
      }
      code = cli::LastReportedCode();
      out = out_stream.Close();
      err = err_stream.Close();
    }
  }
  if (!streams_ok) throw std::runtime_error("lmkit: cannot open a memory stream for the command's output");
  if (check && rc != 0) Raise(FailureOf(code, rc, err));
  return {rc, nb::bytes(out.data(), out.size()), err};
}

}  // namespace

void RegisterCli(nb::module_& m) {
  m.def("_run_cli", &RunCli, nb::arg("args"), nb::arg("check"),
        "Runs one lmkit command line in this process: (exit code, stdout bytes, stderr text); with check, a non-zero "
        "exit raises the exception of its error.");
}

}  // namespace lmkit::py
