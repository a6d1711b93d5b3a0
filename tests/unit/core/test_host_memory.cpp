// available_memory_bytes and cgroup_memory_headroom on fake /proc and /sys/fs/cgroup trees.

#include <string>

#include <catch2/catch.hpp>

#include "llaisys/core/host_memory.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::test;

TEST_CASE("host memory: a container's memory limit counts as the available memory", "[core][memory]") {
  TempDir root;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  auto number = [](uint64_t n) { return std::to_string(n) + "\n"; };

  SECTION("cgroup v2: the limit less the usage beyond inactive file cache, the tightest ancestor wins") {
    root.write("proc/self/cgroup", "0::/outer/inner\n");
    root.write("sys/fs/cgroup/memory.max", "max\n");  // the root cgroup has none
    root.write("sys/fs/cgroup/outer/memory.max", number(4096 * kMiB));
    root.write("sys/fs/cgroup/outer/memory.current", number(1024 * kMiB));
    root.write("sys/fs/cgroup/outer/inner/memory.max", number(1024 * kMiB));
    root.write("sys/fs/cgroup/outer/inner/memory.current", number(512 * kMiB));
    root.write("sys/fs/cgroup/outer/inner/memory.stat", "anon 1\ninactive_file " + number(256 * kMiB) + "active_file 7\n");
    CHECK(cgroup_memory_headroom(root.path()) == 768 * kMiB);  // 1024 - (512 - 256)
    // A parent with less room than its child's limit.
    root.write("sys/fs/cgroup/outer/memory.current", number(3584 * kMiB));
    CHECK(cgroup_memory_headroom(root.path()) == 512 * kMiB);
  }
  SECTION("cgroup v1: the memory controller's hierarchy, 'no limit' written as 2^63 - 4096") {
    root.write("proc/self/cgroup", "5:cpu,cpuacct:/ctr\n4:memory:/ctr\n0::/\n");
    root.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    root.write("sys/fs/cgroup/memory/ctr/memory.limit_in_bytes", number(2048 * kMiB));
    root.write("sys/fs/cgroup/memory/ctr/memory.usage_in_bytes", number(1536 * kMiB));
    root.write("sys/fs/cgroup/memory/ctr/memory.stat", "cache 5\ntotal_inactive_file " + number(512 * kMiB));
    CHECK(cgroup_memory_headroom(root.path()) == 1024 * kMiB);
  }
  SECTION("usage over the limit leaves no room") {
    root.write("proc/self/cgroup", "0::/full\n");
    root.write("sys/fs/cgroup/full/memory.max", number(100 * kMiB));
    root.write("sys/fs/cgroup/full/memory.current", number(300 * kMiB));
    CHECK(cgroup_memory_headroom(root.path()) == 0);
  }
  SECTION("no limit anywhere, or no cgroup files at all") {
    root.write("proc/self/cgroup", "0::/free\n");
    root.write("sys/fs/cgroup/free/memory.max", "max\n");
    CHECK_FALSE(cgroup_memory_headroom(root.path()).has_value());
    TempDir empty;
    CHECK_FALSE(cgroup_memory_headroom(empty.path()).has_value());
  }
  // Whatever this machine's limits, the available memory never exceeds them.
  if (const auto headroom = cgroup_memory_headroom(); headroom) CHECK(available_memory_bytes() <= *headroom);
}
