#pragma once
// How much memory this process can still take, for decisions such as reading model weights into
// memory rather than mapping them.

#include <cstdint>
#include <filesystem>
#include <optional>

namespace llaisys {

// MemAvailable of /proc/meminfo (free memory on a system without it), or less when the process's
// cgroup (a container) leaves less room: in bytes.
uint64_t available_memory_bytes();

// What the memory limits of this process's cgroups (v2, or v1's memory controller, the tightest of
// each cgroup and its ancestors) still allow it to take, counting reclaimable file cache as free;
// nullopt when no limit applies. `root` is "/" but for tests.
std::optional<uint64_t> cgroup_memory_headroom(const std::filesystem::path& root = "/");

}  // namespace llaisys
