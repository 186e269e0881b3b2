#include "lmkit/common/status.h"

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
  return Status(ErrorCode::kIo, std::move(subject), what + ": " + std::strerror(errno_value));
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  if (subject_.empty()) return OneLine(message_);
  return OneLine(subject_ + ": " + message_);
}

Status Status::WithSubject(const std::string& subject) const {
  Status s = *this;
  if (s.subject_.empty()) s.subject_ = subject;
  return s;
}

Status Status::Annotate(const std::string& prefix) const {
  Status s = *this;
  s.message_ = prefix + ": " + s.message_;
  return s;
}

}  // namespace lmkit
