#pragma once
// PluginRegistry: finds model plugins, maps HF `architectures` to them, and opens models.
//
// Contract: the registry never aborts and never throws for a bad plugin. Each failure (not a shared
// library, missing entry point, entry point returning NULL, ABI version mismatch, incomplete table,
// an architecture already claimed by another plugin) is logged, recorded in load_errors() with the
// file and the reason, and loading goes on with the next file. A model whose architectures no plugin
// serves gets an error listing what is served.
//
// Plugins stay loaded while the registry or any model created from them is alive.

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/any_model.hpp"
#include "llaisys/model/plugin_abi.h"

namespace llaisys {

class LoadedPlugin;

struct PluginLoadError {
  std::filesystem::path path;
  Status status;
};

struct PluginSummary {
  std::string name;
  std::string version;
  std::string origin;  // file path, or "builtin:<name>"
  std::vector<std::string> architectures;  // the ones this registry routes to it
};

class PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();
  PluginRegistry(PluginRegistry&&) noexcept;
  PluginRegistry& operator=(PluginRegistry&&) noexcept;

  // Loads every regular file named lib*.so or *.so in `directory`, in name order. Returns how many
  // loaded; failures are in load_errors(). A missing directory is itself recorded as an error.
  std::size_t load_directory(const std::filesystem::path& directory);
  // Loads one shared library. On failure the error is also recorded in load_errors().
  Status load_file(const std::filesystem::path& path);
  // Registers a table linked into the host (no dlopen). Same checks as load_file.
  Status add_builtin(const llaisys_plugin* table);

  std::span<const PluginLoadError> load_errors() const;
  std::vector<PluginSummary> plugins() const;
  // Every architecture served, sorted.
  std::vector<std::string> architectures() const;

  // The plugin serving `architecture`, or a not_found error listing what is served.
  Result<std::shared_ptr<const LoadedPlugin>> find(std::string_view architecture) const;

  // Reads `params.model_dir`/config.json, picks the first of its `architectures` that a plugin
  // serves, and creates the model.
  Result<AnyModel> open_model(const ModelCreateParams& params) const;

 private:
  Status add_table(const llaisys_plugin* table, std::shared_ptr<void> library, std::string origin);

  struct Route {
    std::string architecture;
    std::shared_ptr<const LoadedPlugin> plugin;
  };
  std::vector<std::shared_ptr<const LoadedPlugin>> plugins_;
  std::vector<Route> routes_;
  std::vector<PluginLoadError> errors_;
};

// Reads the `architectures` list of a model directory's config.json.
Result<std::vector<std::string>> read_architectures(const std::filesystem::path& model_dir);

// The default plugin directory for an executable: <exe_dir>/../lib/llaisys/plugins.
std::filesystem::path default_plugin_dir();

}  // namespace llaisys
