// llaisys-offline: batch jobs over JSONL files (generation, inspection) and a terminal chat. See README.md.

#include <cstdio>

#include "app_log.hpp"
#include "commands.hpp"

namespace llaisys::offline {

PluginRegistry load_plugins(const CommonOptions& options) {
  PluginRegistry registry;
  registry.load_directory(options.plugin_dir.empty() ? default_plugin_dir() : options.plugin_dir);
  return registry;
}

}  // namespace llaisys::offline

int main(int argc, char** argv) {
  using namespace llaisys::offline;
  CLI::App app{"llaisys-offline: run llaisys models over JSONL files"};
  app.require_subcommand(1);
  CommonOptions options;
  app.add_option("--plugin-dir", options.plugin_dir, "directory of model plugins (*.so)");
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.add_option("--device", options.device, "cpu or cuda:N")->capture_default_str();
  app.add_option("--threads", options.num_threads, "compute threads (0: all cores)")
      ->capture_default_str();
  app.add_option("--model-options", options.model_options,
                 "plugin options as JSON, e.g. '{\"matmul\": \"bf16\"}' (CPU: bf16 dot products, about 2x the batch "
                 "and prefill rate on AVX512-BF16 CPUs, not bit-identical to the default f32)")
      ->capture_default_str();

  int exit_code = 0;
  add_plugins_command(app, options, exit_code);
  add_generate_command(app, options, exit_code);
  add_chat_command(app, options, exit_code);
  add_text_commands(app, exit_code);

  app.parse_complete_callback([&] { llaisys::app::init_logging(options.log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
