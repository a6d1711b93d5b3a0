#pragma once
// A fresh directory under the system temp dir, removed with everything in it on destruction.

#include <filesystem>
#include <string_view>

namespace llaisys::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // Writes `content` to path()/name (creating parent directories) and returns the full path.
  std::filesystem::path write(std::string_view name, std::string_view content) const;

 private:
  std::filesystem::path path_;
};

}  // namespace llaisys::test
