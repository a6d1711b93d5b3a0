// llaisys-bench: reproducible benchmarks; each prints its figure next to a reference measured in the
// same run (docs/BENCHMARKS.md records the results).

#include "app_log.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"llaisys-bench: llaisys benchmarks"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  int exit_code = 0;
  llaisys::bench::add_memcpy_command(app, exit_code);
  llaisys::bench::add_tokenizer_command(app, exit_code);
  llaisys::bench::add_model_command(app, exit_code);
  llaisys::bench::add_engine_command(app, exit_code);
  llaisys::bench::add_speculative_command(app, exit_code);
  llaisys::bench::add_kv_command(app, exit_code);
  llaisys::bench::add_structured_command(app, exit_code);
#ifdef LLAISYS_HAVE_CUDA
  llaisys::bench::add_cuda_command(app, exit_code);
#endif
  app.parse_complete_callback([&] { llaisys::app::init_logging(log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
