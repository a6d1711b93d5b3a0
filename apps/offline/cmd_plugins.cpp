// `llaisys-offline plugins`: what the registry found, and why anything was refused.

#include <fmt/format.h>

#include "commands.hpp"

namespace llaisys::offline {

void add_plugins_command(CLI::App& app, const CommonOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("plugins", "list model plugins and load errors");
  cmd->callback([&options, &exit_code] {
    PluginRegistry registry = load_plugins(options);
    for (const PluginSummary& plugin : registry.plugins()) {
      fmt::print("{} {} ({}): {}\n", plugin.name, plugin.version, plugin.origin,
                 fmt::join(plugin.architectures, ", "));
    }
    for (const PluginLoadError& error : registry.load_errors()) {
      fmt::print(stderr, "error: {}\n", error.status.message());
    }
    exit_code = registry.plugins().empty() ? 1 : 0;
  });
}

}  // namespace llaisys::offline
