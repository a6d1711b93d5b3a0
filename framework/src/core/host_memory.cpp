// Memory this process can still take: /proc/meminfo, and the limits of its cgroups (containers).

#include "llaisys/core/host_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>

namespace llaisys {
namespace fs = std::filesystem;

namespace {

// The first whitespace-separated number of a file ("max" and anything unreadable: nullopt).
std::optional<uint64_t> read_number(const fs::path& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

// The value of `key` in a "key value" per line file such as memory.stat (0 when absent).
uint64_t read_stat(const fs::path& path, std::string_view key) {
  std::ifstream in(path);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

// Limits at or above 2^60 bytes mean "no limit" (cgroup v1 writes 2^63 - 4096).
constexpr uint64_t kNoLimit = uint64_t{1} << 60;

}  // namespace

std::optional<uint64_t> cgroup_memory_headroom(const fs::path& root) {
  std::ifstream cgroups(root / "proc/self/cgroup");
  std::string line;
  std::optional<uint64_t> headroom;
  while (std::getline(cgroups, line)) {
    // "hierarchy-id:controllers:path"; v2 is "0::path", v1's memory controller "N:...memory...:path".
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const fs::path path = fs::path(line.substr(second + 1)).relative_path();
    bool v2 = false;
    fs::path base;
    if (controllers.empty()) {
      v2 = true;
      base = root / "sys/fs/cgroup";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      base = root / "sys/fs/cgroup/memory";
    } else {
      continue;
    }
    // The tightest limit of the cgroup and its ancestors, each less what it uses beyond reclaimable
    // file cache (the cache counts in its usage but is dropped before the OOM killer acts).
    for (fs::path at = path;; at = at.parent_path()) {
      const fs::path dir = base / at;
      const auto limit = read_number(dir / (v2 ? "memory.max" : "memory.limit_in_bytes"));
      if (limit && *limit < kNoLimit) {
        const uint64_t usage = read_number(dir / (v2 ? "memory.current" : "memory.usage_in_bytes")).value_or(0);
        const uint64_t cache = read_stat(dir / "memory.stat", v2 ? "inactive_file" : "total_inactive_file");
        const uint64_t used = usage > cache ? usage - cache : 0;
        const uint64_t room = *limit > used ? *limit - used : 0;
        headroom = headroom ? std::min(*headroom, room) : room;
      }
      if (at.empty() || at == at.parent_path()) break;
    }
  }
  return headroom;
}

uint64_t available_memory_bytes() {
  uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  if (available == 0) {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) available = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
  // In a container the machine's free memory is not the process's to take.
  if (const auto headroom = cgroup_memory_headroom(); headroom) available = std::min(available, *headroom);
  return available;
}

}  // namespace llaisys
