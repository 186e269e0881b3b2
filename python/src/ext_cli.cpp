// The command layer in-process: lmkit.flops(...), lmkit.quantize(...) and the other report functions run the same
// command line the lmkit binary would (commands/run_cli.cpp) and return its --json document. Output is captured, not
// written to the process's stdout/stderr.
#include <stdio.h>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

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

// (exit code, stdout bytes, stderr text, name of the last error's code). The GIL is released while it runs.
std::tuple<int, nb::bytes, std::string, std::string> RunCli(const std::vector<std::string>& args) {
  std::string out, err;
  int rc = 0;
  ErrorCode code = ErrorCode::kOk;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(cli_mutex);
    MemoryStream out_stream, err_stream;
    if (out_stream.file() == nullptr || err_stream.file() == nullptr) {
      rc = -1;
    } else {
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
  if (rc == -1) throw std::runtime_error("lmkit: cannot open a memory stream for the command's output");
  const char* code_name = code == ErrorCode::kIo            ? "io"
                          : code == ErrorCode::kNotFound    ? "not_found"
                          : code == ErrorCode::kInternal    ? "internal"
                          : code == ErrorCode::kCancelled   ? "cancelled"
                          : code == ErrorCode::kOk          ? "ok"
                                                            : "invalid";
  return {rc, nb::bytes(out.data(), out.size()), err, code_name};
}

}  // namespace

void RegisterCli(nb::module_& m) {
  m.def("_run_cli", &RunCli, nb::arg("args"),
        "Runs one lmkit command line in this process: (exit code, stdout bytes, stderr text, error kind).");
}

}  // namespace lmkit::py
