// Multi-file outputs that appear all at once: a tokenizer's vocab.json, merges.txt and tokenizer.json, or a main
// output and the report beside it.
//
// Contract: StagedDir::Create(dir) creates `dir` when missing, takes an exclusive lock on it (a second writer gets
// kInvalidInput "another process is writing this directory" at once, never a mix of two runs' files), and makes an
// empty staging directory beside it on the same file system. Callers write each output at Path(name) (with
// AtomicFile); nothing in `dir` changes until Commit(), which moves them all in: with one rename that swaps the two
// directories when `dir` holds nothing but files of the staged names, else with one rename per file (every file is
// complete and fsynced before the first, so a full disk or a write error never leaves a mix; only a crash between
// renames could). A directory where an output file goes is kInvalidInput ("DIR/name: is a directory"), from
// WriteFile and Commit, before anything changes. Destroying an uncommitted StagedDir removes the staging directory, and
// `dir` when Create made it. A terminating signal removes them too (interrupt_cleanup.h). Not thread-safe; distinct
// objects are independent.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit {

class AtomicFile;

class StagedDir {
 public:
  // Errors: kInvalidInput when `dir` is not a directory or another process holds its lock, kIo when it cannot be
  // created or the staging directory cannot be made.
  static Result<StagedDir> Create(const std::string& dir);

  StagedDir() = default;
  StagedDir(StagedDir&& other) noexcept;
  StagedDir& operator=(StagedDir&& other) noexcept;
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;
  ~StagedDir();

  // Where to write output file `name` (a file name, no '/'); Commit moves it to dir()/name.
  std::string Path(const std::string& name);
  // Writes `content` to Path(name) with AtomicFile; errors name dir()/name, the path the user asked for.
  Status WriteFile(const std::string& name, std::string_view content);
  // As WriteFile, with the content streamed: `fill` writes it to the file (AtomicFile::Write), for outputs too large
  // to build in memory first.
  Status WriteFileWith(const std::string& name, const std::function<Status(AtomicFile&)>& fill);
  Status Commit();

  const std::string& dir() const { return dir_; }
  const std::string& staging() const { return staging_; }

 private:
  void Abandon();
  Status CommitByRenames();
  Status CheckDestination(const std::string& name) const;

  std::string dir_;
  std::string staging_;
  bool can_swap_ = false;  // staging is beside a real directory `dir`: Commit may swap the two
  bool created_dir_ = false;
  int lock_fd_ = -1;
  std::vector<std::string> names_;
  std::vector<int> slots_;  // cleanup registrations (interrupt_cleanup.h)
};

}  // namespace lmkit
