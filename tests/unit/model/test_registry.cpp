#include <algorithm>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "llaisys/model/registry.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
namespace fs = std::filesystem;

namespace {

const fs::path kPluginDir = LLAISYS_PLUGIN_DIR;
const fs::path kTestPlugins = LLAISYS_TEST_PLUGIN_DIR;

std::string error_for(const PluginRegistry& registry, std::string_view file_part) {
  for (const PluginLoadError& e : registry.load_errors()) {
    if (e.path.string().find(file_part) != std::string::npos) return e.status.message();
  }
  return "<no error recorded for " + std::string(file_part) + ">";
}

}  // namespace

TEST_CASE("the registry loads the built plugins and routes architectures") {
  PluginRegistry registry;
  CHECK(registry.load_directory(kPluginDir) >= 1);
  CHECK(registry.load_errors().empty());
  auto mock = registry.find("LlaisysMockForCausalLM");
  REQUIRE(mock.ok());
  CHECK(mock.value()->name() == "mock");
  const auto archs = registry.architectures();
  CHECK(std::find(archs.begin(), archs.end(), "LlaisysMockForCausalLM") != archs.end());
}

TEST_CASE("each broken plugin gets its own clear error and loading goes on") {
  test::TempDir dir;
  // Not a shared library at all.
  dir.write("libnot-elf.so", "this is a text file, not an ELF object\n");
  for (const auto& entry : fs::directory_iterator(kTestPlugins / "broken")) {
    fs::copy_file(entry.path(), dir / entry.path().filename().string());
  }
  // A working plugin in the same directory still loads.
  fs::copy_file(kPluginDir / "libllaisys-mock.so", dir / "libllaisys-mock.so");

  PluginRegistry registry;
  CHECK(registry.load_directory(dir.path()) == 1);
  CHECK(registry.load_errors().size() == 7);
  CHECK_THAT(error_for(registry, "libnot-elf.so"), Catch::Contains("not a loadable shared library"));
  CHECK_THAT(error_for(registry, "broken-no_entry"),
             Catch::Contains("missing entry point 'llaisys_plugin_entry' (not a llaisys plugin?)"));
  CHECK_THAT(error_for(registry, "broken-bad_abi"),
             Catch::Contains("plugin 'broken' was built for plugin ABI 42, this host speaks ABI 2"));
  // A version 1 plugin (logits rows back to the host) is refused by name, with what to do.
  CHECK_THAT(error_for(registry, "broken-abi_v1"),
             Catch::Contains("plugin 'broken' was built for plugin ABI 1") && Catch::Contains("rebuild it"));
  CHECK_THAT(error_for(registry, "broken-null_table"), Catch::Contains("entry point returned NULL"));
  CHECK_THAT(error_for(registry, "broken-missing_step"),
             Catch::Contains("plugin 'broken' table lacks 'step'"));
  CHECK_THAT(error_for(registry, "broken-no_architectures"),
             Catch::Contains("plugin 'broken' serves no architectures"));
  // Every error names its file.
  for (const PluginLoadError& e : registry.load_errors()) {
    CHECK_THAT(e.status.message(), Catch::Contains(e.path.string()));
  }
  CHECK(registry.find("LlaisysMockForCausalLM").ok());
}

TEST_CASE("two plugins claiming one architecture: the first keeps it, the second is refused") {
  PluginRegistry registry;
  REQUIRE(registry.load_file(kPluginDir / "libllaisys-mock.so").ok());
  Status dup = registry.load_file(kTestPlugins / "dup" / "libbroken-dup_arch.so");
  REQUIRE_FALSE(dup.ok());
  CHECK_THAT(dup.message(), Catch::Contains("architecture conflict: 'LlaisysMockForCausalLM' is "
                                            "already served by plugin 'mock'"));
  CHECK_THAT(dup.message(), Catch::Contains("plugin not used"));
  CHECK(registry.find("LlaisysMockForCausalLM").value()->name() == "mock");
  CHECK(registry.plugins().size() == 1);
  // The same file twice is a name conflict, not a crash.
  Status again = registry.load_file(kPluginDir / "libllaisys-mock.so");
  CHECK_THAT(again.message(), Catch::Contains("a plugin named 'mock' is already loaded"));
}

TEST_CASE("unknown architectures and bad model directories are clear errors") {
  PluginRegistry registry;
  registry.load_directory(kPluginDir);
  test::TempDir dir;
  dir.write("config.json", R"({"architectures": ["GPTNeoXForCausalLM"]})");
  auto model = registry.open_model({.model_dir = dir.path()});
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().code() == ErrorCode::not_found);
  CHECK_THAT(model.status().message(),
             Catch::Contains("unknown architecture 'GPTNeoXForCausalLM': no loaded plugin serves it "
                             "(served: ") &&
                 Catch::Contains("LlaisysMockForCausalLM"));

  dir.write("config.json", "{not json");
  CHECK(registry.open_model({.model_dir = dir.path()}).status().code() == ErrorCode::parse_error);
  dir.write("config.json", R"({"architectures": []})");
  CHECK_THAT(registry.open_model({.model_dir = dir.path()}).status().message(),
             Catch::Contains("missing \"architectures\""));
  CHECK(registry.open_model({.model_dir = dir / "nowhere"}).status().code() == ErrorCode::not_found);

  PluginRegistry missing;
  CHECK(missing.load_directory(dir / "no-such-dir") == 0);
  CHECK_THAT(missing.load_errors()[0].status.message(), Catch::Contains("cannot read plugin directory"));
}

TEST_CASE("a plugin built outside the tree loads when the registry is pointed at it") {
  test::TempDir dir;
  const fs::path source = fs::path(LLAISYS_SOURCE_DIR) / "tests/plugins/out_of_tree/echo_plugin.c";
  const fs::path library = dir / "libecho.so";
  const std::string command = std::string(LLAISYS_TEST_C_COMPILER) + " -std=c11 -O1 -shared -fPIC -I" +
                              (fs::path(LLAISYS_SOURCE_DIR) / "framework/include").string() + " " +
                              source.string() + " -o " + library.string();
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);

  PluginRegistry registry;
  REQUIRE(registry.load_directory(dir.path()) == 1);
  auto model_dir = dir / "model";
  fs::create_directories(model_dir);
  dir.write("model/config.json", R"({"architectures": ["EchoForCausalLM"]})");
  auto model = registry.open_model({.model_dir = model_dir});
  REQUIRE(model.ok());
  CHECK(model->info().architecture == "EchoForCausalLM");
  CHECK(model->plugin_name() == "echo");
  REQUIRE(model->init_kv_cache({.num_blocks = 2, .block_size = 16}).ok());

  const std::vector<TokenId> tokens{3, 9};
  const std::vector<int32_t> positions{0, 1};
  const std::vector<int32_t> seqs{0, 0};
  const std::vector<BlockId> table{0};
  const BlockId* tables[] = {table.data()};
  const int32_t lens[] = {1};
  const int32_t outputs[] = {0, 1};
  std::vector<float> logits(2 * 16);
  REQUIRE(model->forward({.token_ids = tokens,
                          .positions = positions,
                          .seq_indices = seqs,
                          .block_tables = tables,
                          .block_table_lens = lens,
                          .output_token_indices = outputs},
                         logits)
              .ok());
  CHECK(logits[4] == 1.0f);        // after token 3: 4
  CHECK(logits[16 + 10] == 1.0f);  // after token 9: 10

  // Sampling in its step: greedy, with a mask; what it does not implement is refused by name.
  REQUIRE(model->init_kv_cache({.num_blocks = 2, .block_size = 16, .num_seq_slots = 2}).ok());
  const ForwardBatch batch{.token_ids = tokens,
                           .positions = positions,
                           .seq_indices = seqs,
                           .block_tables = tables,
                           .block_table_lens = lens,
                           .output_token_indices = outputs};
  const std::vector<uint32_t> only_7{1u << 7};
  std::vector<SampleRow> rows{SampleRow{}, SampleRow{.allowed = only_7}};
  std::vector<int32_t> sampled(2, -1);
  REQUIRE(model->step(batch, rows, StepOutput{.tokens = sampled}).ok());
  CHECK(sampled == std::vector<int32_t>{4, 7});
  rows[0].temperature = 0.7f;
  CHECK_THAT(model->step(batch, rows, StepOutput{.tokens = sampled}).message(),
             Catch::Contains("echo: only greedy sampling"));
}

TEST_CASE("sliding_window is read from plugins whose info struct covers it, and must be >= 0") {
  // A minimal plugin reporting a window, built three ways: an older struct that ends before the
  // field (the host must read 0, whatever the bytes after it hold), the full struct, and a
  // negative window.
  static constexpr const char* kSource = R"(#include <stddef.h>
#include <string.h>
#include "llaisys/model/plugin_abi.h"
static int model_storage;
static llaisys_status create(const llaisys_model_params* p, llaisys_model** out, llaisys_error* e) {
  (void)p; (void)e; *out = (llaisys_model*)&model_storage; return LLAISYS_OK;
}
static void destroy(llaisys_model* m) { (void)m; }
static llaisys_status get_info(const llaisys_model* m, llaisys_model_info* info, llaisys_error* e) {
  (void)m; (void)e;
  memset(info, 0, sizeof(*info));
  info->struct_size = STRUCT_SIZE;
  strcpy(info->architecture, "WindowForCausalLM");
  info->vocab_size = 8; info->hidden_size = 4; info->num_layers = 1; info->num_kv_heads = 1;
  info->head_dim = 1; info->max_context = 64; info->bos_token_id = -1;
  info->sliding_window = WINDOW;
  return LLAISYS_OK;
}
static llaisys_status init_kv(llaisys_model* m, const llaisys_kv_cache_config* c, llaisys_error* e) {
  (void)m; (void)c; (void)e; return LLAISYS_OK;
}
static llaisys_status step(llaisys_model* m, const llaisys_forward_batch* b, const llaisys_sample_row* s,
                           const llaisys_step_output* o, llaisys_error* e) {
  (void)m; (void)b; (void)s; (void)o; (void)e; return LLAISYS_OK;
}
static llaisys_status copy_blocks(llaisys_model* m, const llaisys_block_copy* c, int32_t n, llaisys_error* e) {
  (void)m; (void)c; (void)n; (void)e; return LLAISYS_OK;
}
static const char* const kArchitectures[] = {"WindowForCausalLM", NULL};
static const llaisys_plugin kTable = {
    .abi_version = LLAISYS_PLUGIN_ABI_VERSION, .struct_size = sizeof(llaisys_plugin), .name = "window",
    .version = "0", .architectures = kArchitectures, .create = create, .destroy = destroy,
    .get_info = get_info, .init_kv_cache = init_kv, .step = step, .copy_blocks = copy_blocks};
const llaisys_plugin* llaisys_plugin_entry(void) { return &kTable; }
)";
  test::TempDir dir;
  const fs::path source = dir.write("window_plugin.c", kSource);
  dir.write("model/config.json", R"({"architectures": ["WindowForCausalLM"]})");
  auto open_with = [&](const std::string& name, const std::string& struct_size, int window) {
    const fs::path plugin_dir = dir / name;
    fs::create_directories(plugin_dir);
    const std::string command = std::string(LLAISYS_TEST_C_COMPILER) + " -std=c11 -O1 -shared -fPIC -I" +
                                (fs::path(LLAISYS_SOURCE_DIR) / "framework/include").string() +
                                " '-DSTRUCT_SIZE=" + struct_size + "' -DWINDOW=" + std::to_string(window) + " " +
                                source.string() + " -o " + (plugin_dir / "libwindow.so").string();
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
    PluginRegistry registry;
    REQUIRE(registry.load_directory(plugin_dir) == 1);
    return registry.open_model({.model_dir = dir / "model"});
  };
  auto older = open_with("older", "offsetof(llaisys_model_info, sliding_window)", 4096);
  REQUIRE(older.ok());
  CHECK(older->info().sliding_window == 0);
  auto current = open_with("current", "sizeof(llaisys_model_info)", 4096);
  REQUIRE(current.ok());
  CHECK(current->info().sliding_window == 4096);
  auto negative = open_with("negative", "sizeof(llaisys_model_info)", -3);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().code() == ErrorCode::plugin_error);
  CHECK_THAT(negative.status().message(), Catch::Contains("negative sliding window -3"));
}
