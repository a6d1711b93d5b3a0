#include "llaisys/model/registry.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "llaisys/core/log.hpp"
#include "llaisys/model/config_reader.hpp"

namespace llaisys {
namespace fs = std::filesystem;

namespace {

// The table must be large enough to hold every member this host calls.
constexpr std::size_t kRequiredTableSize = offsetof(llaisys_plugin, copy_blocks) + sizeof(void*);

Status check_table(const llaisys_plugin* table) {
  if (table == nullptr) return Status(ErrorCode::plugin_error, "entry point returned NULL");
  if (table->abi_version != LLAISYS_PLUGIN_ABI_VERSION) {
    // abi_version, struct_size and name keep their places in every version: the name is safe to read.
    const std::string name = table->name != nullptr ? fmt::format("plugin '{}'", table->name) : "the plugin";
    if (table->abi_version == 1) {
      return make_error(ErrorCode::plugin_error,
                        "{} was built for plugin ABI 1 (forward returns logits rows to the host); this host "
                        "speaks ABI {}, where the model samples inside its step: rebuild it against this "
                        "llaisys SDK (docs/PLUGINS.md)",
                        name, LLAISYS_PLUGIN_ABI_VERSION);
    }
    return make_error(ErrorCode::plugin_error, "{} was built for plugin ABI {}, this host speaks ABI {}", name,
                      table->abi_version, LLAISYS_PLUGIN_ABI_VERSION);
  }
  if (table->struct_size < kRequiredTableSize) {
    return make_error(ErrorCode::plugin_error, "plugin table of {} bytes is too small (need {})",
                      table->struct_size, kRequiredTableSize);
  }
  if (table->name == nullptr || table->name[0] == '\0') {
    return Status(ErrorCode::plugin_error, "plugin table has no name");
  }
  if (table->architectures == nullptr || table->architectures[0] == nullptr) {
    return make_error(ErrorCode::plugin_error, "plugin '{}' serves no architectures", table->name);
  }
  const std::pair<const void*, const char*> functions[] = {
      {reinterpret_cast<const void*>(table->create), "create"},
      {reinterpret_cast<const void*>(table->destroy), "destroy"},
      {reinterpret_cast<const void*>(table->get_info), "get_info"},
      {reinterpret_cast<const void*>(table->init_kv_cache), "init_kv_cache"},
      {reinterpret_cast<const void*>(table->step), "step"},
      {reinterpret_cast<const void*>(table->copy_blocks), "copy_blocks"},
  };
  for (const auto& [fn, fn_name] : functions) {
    if (fn == nullptr) {
      return make_error(ErrorCode::plugin_error, "plugin '{}' table lacks '{}'", table->name, fn_name);
    }
  }
  return Status();
}

bool looks_like_plugin_file(const fs::directory_entry& entry) {
  std::error_code ec;
  if (!entry.is_regular_file(ec)) return false;
  return entry.path().extension() == ".so";
}

}  // namespace

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() = default;
PluginRegistry::PluginRegistry(PluginRegistry&&) noexcept = default;
PluginRegistry& PluginRegistry::operator=(PluginRegistry&&) noexcept = default;

std::size_t PluginRegistry::load_directory(const fs::path& directory) {
  std::error_code ec;
  fs::directory_iterator it(directory, ec);
  if (ec) {
    Status status = make_error(ErrorCode::not_found, "cannot read plugin directory '{}': {}",
                               directory.string(), ec.message());
    log::warn("{}", status.message());
    errors_.push_back({directory, std::move(status)});
    return 0;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : it) {
    if (looks_like_plugin_file(entry)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::size_t loaded = 0;
  for (const fs::path& file : files) {
    if (load_file(file).ok()) ++loaded;
  }
  return loaded;
}

Status PluginRegistry::load_file(const fs::path& path) {
  auto fail = [&](Status status) {
    status.with_context(fmt::format("plugin '{}'", path.string()));
    log::warn("{}", status.message());
    errors_.push_back({path, status});
    return status;
  };
  dlerror();  // clear
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return fail(make_error(ErrorCode::plugin_error, "not a loadable shared library: {}",
                           why != nullptr ? why : "unknown dlopen error"));
  }
  std::shared_ptr<void> library(handle, [](void* h) { dlclose(h); });
  void* symbol = dlsym(handle, LLAISYS_PLUGIN_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    return fail(make_error(ErrorCode::plugin_error, "missing entry point '{}' (not a llaisys plugin?)",
                           LLAISYS_PLUGIN_ENTRY_SYMBOL));
  }
  auto entry = reinterpret_cast<llaisys_plugin_entry_fn>(symbol);
  const llaisys_plugin* table = entry();
  Status status = add_table(table, std::move(library), path.string());
  if (!status.ok()) return fail(std::move(status));
  return Status();
}

Status PluginRegistry::add_builtin(const llaisys_plugin* table) {
  const std::string origin =
      fmt::format("builtin:{}", table != nullptr && table->name != nullptr ? table->name : "?");
  Status status = add_table(table, nullptr, origin);
  if (!status.ok()) {
    status.with_context(fmt::format("plugin '{}'", origin));
    log::warn("{}", status.message());
    errors_.push_back({origin, status});
  }
  return status;
}

Status PluginRegistry::add_table(const llaisys_plugin* table, std::shared_ptr<void> library,
                                 std::string origin) {
  LLAISYS_RETURN_IF_ERROR(check_table(table));
  for (const auto& existing : plugins_) {
    if (existing->name() == table->name) {
      return make_error(ErrorCode::plugin_error, "a plugin named '{}' is already loaded from '{}'",
                        table->name, existing->origin());
    }
  }
  auto plugin = std::make_shared<const LoadedPlugin>(table, std::move(library), std::move(origin));
  std::vector<std::string> accepted;
  std::vector<std::string> conflicts;
  for (const std::string& arch : plugin->architectures()) {
    auto it = std::find_if(routes_.begin(), routes_.end(),
                           [&](const Route& r) { return r.architecture == arch; });
    if (it != routes_.end()) {
      conflicts.push_back(fmt::format("'{}' is already served by plugin '{}' ({})", arch,
                                      it->plugin->name(), it->plugin->origin()));
    } else if (std::find(accepted.begin(), accepted.end(), arch) == accepted.end()) {
      accepted.push_back(arch);
    }
  }
  if (!conflicts.empty()) {
    // The first plugin keeps the architecture; this one is refused for it. Record it either way.
    Status conflict = make_error(ErrorCode::plugin_error, "architecture conflict: {}{}",
                                 fmt::join(conflicts, "; "),
                                 accepted.empty() ? "; plugin not used" : "; other architectures kept");
    if (accepted.empty()) return conflict;
    log::warn("plugin '{}': {}", plugin->origin(), conflict.message());
    errors_.push_back({plugin->origin(), conflict});
  }
  for (std::string& arch : accepted) routes_.push_back({std::move(arch), plugin});
  plugins_.push_back(std::move(plugin));
  log::debug("loaded plugin '{}' from {}", plugins_.back()->name(), plugins_.back()->origin());
  return Status();
}

std::span<const PluginLoadError> PluginRegistry::load_errors() const { return errors_; }

std::vector<PluginSummary> PluginRegistry::plugins() const {
  std::vector<PluginSummary> out;
  for (const auto& plugin : plugins_) {
    PluginSummary summary{.name = plugin->name(),
                          .version = plugin->table().version ? plugin->table().version : "",
                          .origin = plugin->origin(),
                          .architectures = {}};
    for (const Route& route : routes_) {
      if (route.plugin == plugin) summary.architectures.push_back(route.architecture);
    }
    out.push_back(std::move(summary));
  }
  return out;
}

std::vector<std::string> PluginRegistry::architectures() const {
  std::vector<std::string> out;
  for (const Route& route : routes_) out.push_back(route.architecture);
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::shared_ptr<const LoadedPlugin>> PluginRegistry::find(std::string_view architecture) const {
  for (const Route& route : routes_) {
    if (route.architecture == architecture) return route.plugin;
  }
  const std::vector<std::string> served = architectures();
  return make_error(ErrorCode::not_found, "unknown architecture '{}': no loaded plugin serves it{}{}{}",
                    architecture, served.empty() ? " (no plugins are loaded" : " (served: ",
                    fmt::join(served, ", "),
                    errors_.empty() ? ")"
                                    : fmt::format("; {} plugin file(s) failed to load, see the log)",
                                                  errors_.size()));
}

Result<AnyModel> PluginRegistry::open_model(const ModelCreateParams& params) const {
  LLAISYS_ASSIGN_OR_RETURN(std::vector<std::string> archs, read_architectures(params.model_dir));
  Status first_error;
  for (const std::string& arch : archs) {
    auto plugin = find(arch);
    if (plugin.ok()) return AnyModel::create(std::move(plugin).value(), params);
    if (first_error.ok()) first_error = plugin.status();
  }
  return first_error.with_context(fmt::format("model '{}'", params.model_dir.string()));
}

Result<std::vector<std::string>> read_architectures(const fs::path& model_dir) {
  LLAISYS_ASSIGN_OR_RETURN(ConfigReader config, ConfigReader::load(model_dir));
  auto archs = config.strings("architectures");
  if (!archs.ok() || archs->empty()) {
    return make_error(ErrorCode::invalid_argument, "{}: missing \"architectures\" (a non-empty list of strings)",
                      config.source());
  }
  return std::move(archs).value();
}

fs::path default_plugin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::path("lib/llaisys/plugins");
  return (exe.parent_path() / ".." / "lib" / "llaisys" / "plugins").lexically_normal();
}

}  // namespace llaisys
