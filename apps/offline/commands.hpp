#pragma once
// llaisys-offline subcommands. Each adds itself to the CLI and runs when selected.

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "llaisys/model/registry.hpp"

namespace llaisys::offline {

// Options every subcommand shares (read once in main()).
struct CommonOptions {
  std::filesystem::path plugin_dir;  // empty: the default next to the executable
  std::string log_level = "warn";
  std::string device = "cpu";
  int32_t num_threads = 0;
  std::string model_options = "{}";  // the plugin's create options (JSON), e.g. {"matmul": "bf16"}
};

// Loads the plugins of `options.plugin_dir`, logging (not failing on) broken ones.
PluginRegistry load_plugins(const CommonOptions& options);

// Each returns the subcommand's exit code through `exit_code` when it ran.
void add_plugins_command(CLI::App& app, const CommonOptions& options, int& exit_code);
void add_generate_command(CLI::App& app, const CommonOptions& options, int& exit_code);
// chat: an interactive conversation (or one message per line from a pipe).
void add_chat_command(CLI::App& app, const CommonOptions& options, int& exit_code);
// tokenize, detokenize, render: a model directory's tokenizer and chat template over JSONL.
void add_text_commands(CLI::App& app, int& exit_code);

}  // namespace llaisys::offline
