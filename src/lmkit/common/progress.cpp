#include "lmkit/common/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "lmkit/common/units.h"

namespace lmkit {

TerminalProgress::TerminalProgress(int fd, bool enabled) : fd_(fd), active_(enabled && ::isatty(fd) == 1) {}

TerminalProgress::~TerminalProgress() { Finish(); }

void TerminalProgress::Begin(const std::string& label, uint64_t total, const std::string& unit) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  label_ = label;
  unit_ = unit;
  total_ = total;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = start_ - std::chrono::seconds(1);
}

void TerminalProgress::Update(uint64_t done) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(125)) return;
  last_draw_ = now;
  Draw(done, false);
}

void TerminalProgress::Draw(uint64_t done, bool /*final_draw*/) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  std::string amount, speed;
  if (unit_ == "B") {
    amount = FormatBytes(static_cast<double>(done));
    speed = FormatBytes(rate) + "/s";
  } else {
    amount = std::to_string(done) + " " + unit_;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f %s/s", rate, unit_.c_str());
    speed = buf;
  }
  char line[256];
  if (total_ > 0) {
    double frac = static_cast<double>(done) / static_cast<double>(total_);
    double eta = rate > 0 ? (static_cast<double>(total_) - static_cast<double>(done)) / rate : NAN;
    std::snprintf(line, sizeof line, "\r\033[K%s %5.1f%% %s  %s  ETA %s", label_.c_str(), 100.0 * frac, amount.c_str(),
                  speed.c_str(), FormatDuration(eta).c_str());
  } else {
    std::snprintf(line, sizeof line, "\r\033[K%s %s  %s", label_.c_str(), amount.c_str(), speed.c_str());
  }
  ssize_t ignored = ::write(fd_, line, std::char_traits<char>::length(line));
  (void)ignored;
  drawn_ = true;
}

void TerminalProgress::Finish() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) {
    const char clear[] = "\r\033[K";
    ssize_t ignored = ::write(fd_, clear, sizeof clear - 1);
    (void)ignored;
    drawn_ = false;
  }
}

}  // namespace lmkit
