#include "command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "lmkit/common/output_check.h"
#include "lmkit/common/thread_pool.h"

namespace lmkit::cli {

unsigned GlobalOptions::ResolvedThreads() const { return threads == 0 ? DefaultThreadCount() : threads; }

std::string FlagFor(std::string_view field, const FlagNames& names) {
  if (auto it = names.find(field); it != names.end()) return it->second;
  std::string flag = "--";
  for (char c : field) flag.push_back(c == '_' ? '-' : c);
  return flag;
}

std::FILE* CliOut() { return stdout; }
std::FILE* CliErr() { return stderr; }

int ReportError(const std::string& command, const Status& status, const FlagNames& names) {
  const std::string text = status.ToString([&](std::string_view f) { return FlagFor(f, names); });
  std::fprintf(CliErr(), "lmkit %s: %s\n", command.c_str(), text.c_str());
  if (status.code() == ErrorCode::kInvalidArgument) return kExitUsage;
  if (status.code() == ErrorCode::kCancelled) return kExitInterrupted;
  return kExitFailure;
}

CLI::Validator PositiveFinite() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || !(v > 0))
          return "must be a positive number, not '" + value + "'";
        return "";
      },
      "POSITIVE", "PositiveFinite");
}

int UsageError(const std::string& command, const std::string& message) {
  std::string m = message;
  for (char& c : m)
    if (c == '\n') c = ' ';
  if (command.empty()) {
    std::fprintf(CliErr(), "lmkit: %s\n", m.c_str());
  } else {
    std::fprintf(CliErr(), "lmkit %s: %s\n", command.c_str(), m.c_str());
  }
  return kExitUsage;
}

CLI::Validator DecimalCount() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        uint64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);  // no sign, no base prefix, no spaces
        if (value.empty() || ec != std::errc() || ptr != end)
          return "expected a whole number from 0 to " + std::to_string(UINT64_MAX) + ", got '" + value + "'";
        value = std::to_string(v);
        return std::string();
      },
      "", "decimal");
}

CLI::Validator DecimalInteger() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        int64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);  // optional '-', decimal digits only
        if (value.empty() || ec != std::errc() || ptr != end) return "expected a whole number, got '" + value + "'";
        value = std::to_string(v);
        return std::string();
      },
      "", "decimal");
}

void RequireDecimalIntegers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_min() == 0) continue;  // a flag
    const std::string type = opt->get_type_name();
    const bool is_unsigned = type.rfind("UINT", 0) == 0, is_signed = type.rfind("INT", 0) == 0;
    if (!is_unsigned && !is_signed) continue;
    try {
      opt->get_validator("decimal");
      continue;  // already added where the option is defined (it must run before a range check)
    } catch (const CLI::OptionNotFound&) {
    }
    opt->transform(is_unsigned ? DecimalCount() : DecimalInteger());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) RequireDecimalIntegers(*sub);
}

Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs, const std::string& output,
                               const std::string& flag) {
  Status s = lmkit::CheckOutputIsNotAnInput(inputs, output, "output");
  if (s.ok()) return s;
  return Status::InvalidArgument(RenderFields(s.message(), [&](std::string_view) { return flag; }));
}

void Note(const GlobalOptions& g, const std::string& command, const std::string& message) {
  if (g.quiet) return;
  std::fprintf(CliErr(), "lmkit %s: %s\n", command.c_str(), message.c_str());
}

void NoteCpuFallbackOnce(const GlobalOptions& g, const std::string& command, const std::string& why) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  Note(g, command, why + "; using the CPU path");
}

namespace {
// The first errno of a failed write to stdout (0: none), for StdoutWriteError.
std::atomic<int> stdout_errno{0};
}  // namespace

void PrintText(const std::string& text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), CliOut()) != text.size() || std::fflush(CliOut()) != 0) {
    int expected = 0;
    stdout_errno.compare_exchange_strong(expected, errno != 0 ? errno : EIO);
  }
}

void PrintJson(const Json& doc) {
  std::string s = DumpJson(doc, 2);
  s.push_back('\n');
  PrintText(s);
}

int StdoutWriteError() { return stdout_errno.load(); }

std::unique_ptr<TerminalProgress> MakeProgress(const GlobalOptions& g) {
  return std::make_unique<TerminalProgress>(STDERR_FILENO, !g.quiet);
}

}  // namespace lmkit::cli
