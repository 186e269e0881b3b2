// Progress reporting for long work.
//
// Contract: core code reports through the ProgressSink interface and never prints; a null sink (or NullProgress)
// means "report nothing". TerminalProgress is the one implementation that writes: the command layer creates it for
// stderr, and it draws only when that descriptor is a terminal, at most ~8 times a second, with rate and ETA, and
// erases its line on Finish(). Update() may be called from any thread (it is internally synchronised and cheap when
// nothing is drawn).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace lmkit {

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // Starts a phase: `label` (e.g. "counting"), `total` units (0 = unknown), `unit` ("B" formats as bytes).
  virtual void Begin(const std::string& label, uint64_t total, const std::string& unit) = 0;
  // Sets the units done so far in the current phase.
  virtual void Update(uint64_t done) = 0;
  virtual void Finish() = 0;
};

class NullProgress final : public ProgressSink {
 public:
  void Begin(const std::string&, uint64_t, const std::string&) override {}
  void Update(uint64_t) override {}
  void Finish() override {}
};

class TerminalProgress final : public ProgressSink {
 public:
  // `fd` is where to draw (2 for stderr). `enabled` false turns it into a no-op (--quiet). Drawing also requires
  // isatty(fd).
  TerminalProgress(int fd, bool enabled);
  ~TerminalProgress() override;
  void Begin(const std::string& label, uint64_t total, const std::string& unit) override;
  void Update(uint64_t done) override;
  void Finish() override;
  bool active() const { return active_; }

 private:
  void Draw(uint64_t done, bool final_draw);
  int fd_;
  bool active_;
  std::mutex mu_;
  std::string label_;
  std::string unit_;
  uint64_t total_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace lmkit
