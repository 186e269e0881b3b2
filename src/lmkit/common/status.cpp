#include "lmkit/common/status.h"

#include <cerrno>
#include <cstring>

namespace lmkit {
namespace {
std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}
}  // namespace

Status Status::FromErrno(std::string subject, std::string what, int errno_value) {
  // A missing file is kNotFound whichever call met it, so front ends can say so (Python: FileNotFoundError).
  const ErrorCode code = errno_value == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
  return Status(code, std::move(subject), what + ": " + std::strerror(errno_value));
}

// A field is marked by two ASCII control characters that no message or path of ours contains, so the marks survive
// any concatenation and cannot be confused with text.
constexpr char kFieldOpen = '\x1d', kFieldClose = '\x1e';

std::string Field(std::string_view name) {
  std::string s(1, kFieldOpen);
  s.append(name);
  s.push_back(kFieldClose);
  return s;
}

std::string RenderFields(std::string_view text, const std::function<std::string(std::string_view)>& field_name) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find(kFieldOpen, i);
    const size_t close = open == std::string_view::npos ? open : text.find(kFieldClose, open + 1);
    if (close == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, open - i));
    out += field_name(text.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
}

std::string Status::ToString() const {
  return ToString([](std::string_view name) { return std::string(name); });
}

std::string Status::ToString(const std::function<std::string(std::string_view)>& field_name) const {
  if (ok()) return "ok";
  if (subject_.empty()) return OneLine(RenderFields(message_, field_name));
  return OneLine(RenderFields(subject_ + ": " + message_, field_name));
}

Status Status::WithSubject(const std::string& subject) const {
  Status s = *this;
  if (s.subject_.empty()) s.subject_ = subject;
  return s;
}

Status Status::WithSubjectReplaced(const std::string& subject) const {
  Status s = *this;
  if (!s.ok()) s.subject_ = subject;
  return s;
}

Status Status::Annotate(const std::string& prefix) const {
  Status s = *this;
  s.message_ = prefix + ": " + s.message_;
  return s;
}

}  // namespace lmkit
