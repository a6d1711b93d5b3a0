// `llaisys-offline chat`: a conversation with a model in the terminal.
//
// On a terminal: a prompt with line editing and history (libedit); each answer streams to standard
// output as it is decoded; Ctrl-C stops the answer (the conversation goes on), Ctrl-D quits.
// Otherwise (a pipe, a file): one user message per input line, one answer per turn on standard
// output followed by a newline, nothing else there. Either way, lines starting with '/' are
// commands (/help lists them; '//' sends a message starting with '/'), and notices, statistics
// and errors go to standard error, never into an answer. A reasoning model's think block is shown
// dimmed before the answer on a terminal, on standard error otherwise (so a pipe still reads one
// answer per line); /think hide and /think show switch it.

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "chat_session.hpp"
#include "chat_terminal.hpp"
#include "commands.hpp"
#include "served_model.hpp"

namespace llaisys::offline {
namespace json = boost::json;
namespace {

struct ChatCommandOptions {
  std::filesystem::path model_dir;
  std::filesystem::path chat_template_file;
  std::string system_prompt;
  std::filesystem::path load_file;
  std::optional<int32_t> max_tokens;
  float temperature = 0.7f;
  float top_p = 0.9f;
  int32_t top_k = 40;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  bool show_stats = false;  // a stats line on standard error after every answer
  std::string reasoning_format = "auto";
  app::EngineOptions engine;
};

constexpr std::string_view kHelp =
    "commands:\n"
    "  /help           this list\n"
    "  /clear          start a new conversation (the system prompt stays)\n"
    "  /system TEXT    set the system prompt; '/system' shows it, '/system -' removes it\n"
    "  /stats          tokens (prompt, cached, new) and prefill/decode speed, last turn and in total\n"
    "  /save FILE      write the conversation as JSON messages ({\"messages\": [...]})\n"
    "  /load FILE      replace the conversation with one written by /save (or any messages array)\n"
    "  /think hide|show  hide or show a reasoning model's thinking (shown dimmed by default)\n"
    "  /quit           leave (Ctrl-D too)\n"
    "  //TEXT          send a message that starts with '/'\n"
    "Ctrl-C stops an answer; the conversation keeps what was said.\n";

std::string rate(int64_t tokens, double seconds) {
  return seconds > 0.0 ? fmt::format("{:.1f} tokens/s", static_cast<double>(tokens) / seconds) : "- tokens/s";
}

// One line per turn (--stats) and the /stats block share these words, so tests and people read
// the same thing.
std::string prompt_breakdown(const TurnStats& s) {
  return fmt::format("prompt {} tokens = {} cached + {} prefilled ({} new)", s.prompt_tokens, s.cached_tokens,
                     s.prefilled_tokens(), s.new_tokens);
}

std::string speed_breakdown(const TurnStats& s) {
  return fmt::format("prefill {} tokens in {:.3f} s ({}), decode {} tokens in {:.3f} s ({})", s.prefilled_tokens(),
                     s.prefill_seconds, rate(s.prefilled_tokens(), s.prefill_seconds), s.decoded_tokens(),
                     s.decode_seconds, rate(s.decoded_tokens(), s.decode_seconds));
}

std::string format_stats(const ChatSession& session) {
  const ChatTotals& totals = session.totals();
  if (!session.last_turn()) return "no turn yet\n";
  const TurnStats& last = *session.last_turn();
  std::string out;
  out += fmt::format("last turn:    {}, answer {} tokens ({})\n", prompt_breakdown(last), last.completion_tokens,
                     to_string(last.finish_reason));
  out += fmt::format("              {}\n", speed_breakdown(last));
  out += fmt::format("{:<14}{}, answers {} tokens\n", fmt::format("all {} turn{}:", totals.turns, totals.turns == 1 ? "" : "s"),
                     prompt_breakdown(totals.sum), totals.sum.completion_tokens);
  out += fmt::format("              {}\n", speed_breakdown(totals.sum));
  out += fmt::format("context:      {} tokens carried to the next turn, {} at most; {} turn{} dropped so far\n",
                     session.carried_tokens(), session.context_tokens(), totals.dropped_turns,
                     totals.dropped_turns == 1 ? "" : "s");
  return out;
}

Result<json::value> read_json_file(const std::filesystem::path& path) {
  std::error_code code;
  if (!std::filesystem::is_regular_file(path, code)) {
    return make_error(ErrorCode::not_found, "cannot open '{}': not a file", path.string());
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error(ErrorCode::not_found, "cannot open '{}'", path.string());
  std::string text;
  try {  // libstdc++ throws from a read error even without an exception mask
    text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    return make_error(ErrorCode::io_error, "reading '{}' failed: {}", path.string(), e.what());
  }
  boost::system::error_code error;
  json::value value = json::parse(text, error);
  if (error) return make_error(ErrorCode::parse_error, "'{}' is not JSON: {}", path.string(), error.message());
  return value;
}

Status write_conversation(const ChatSession& session, const std::filesystem::path& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return make_error(ErrorCode::io_error, "cannot write '{}'", path.string());
  file << json::serialize(json::object{{"messages", session.messages()}}) << '\n';
  file.close();
  if (!file) return make_error(ErrorCode::io_error, "writing '{}' failed", path.string());
  return Status();
}

class ChatLoop {
 public:
  ChatLoop(ChatSession& session, LineReader& reader, bool interactive, bool show_stats)
      : session_(session),
        reader_(reader),
        interactive_(interactive),
        show_stats_(show_stats),
        safe_stdout_(isatty(fileno(stdout)) != 0) {}

  // Returns the exit code: 0, or 1 when reading from a pipe and a turn or a command failed.
  int run() {
    while (!quit_) {
      std::optional<InputLine> line = reader_.read("> ");
      if (!line) {
        if (interactive_) fmt::print(stderr, "\n");
        break;
      }
      if (line->interrupted) {
        fmt::print(stderr, "\n");
        continue;
      }
      std::string& text = line->text;
      if (text.find_first_not_of(" \t") == std::string::npos) continue;
      reader_.remember(text);
      if (text.starts_with('/') && !text.starts_with("//")) {
        command(text);
      } else {
        turn(valid_utf8(text.starts_with("//") ? std::string_view(text).substr(1) : std::string_view(text)));
      }
    }
    return failed_ && !interactive_ ? 1 : 0;
  }

 private:
  void fail(const Status& status) {
    fmt::print(stderr, "error: {}\n", status.message());
    failed_ = true;
  }
  static void notice(std::string_view text) { fmt::print(stderr, "[{}]\n", text); }

  void turn(std::string text) {
    SigintWatch sigint;
    bool thinking = false;  // the dimmed think block is open on the terminal
    const auto end_thinking = [&] {
      if (!thinking) return;
      thinking = false;
      std::fputs(safe_stdout_ ? "\x1b[22m\n\n" : "\n", safe_stdout_ ? stdout : stderr);
    };
    const TurnCallbacks callbacks{
        .on_text =
            [&, this](std::string_view piece) {
              end_thinking();
              const std::string shown = safe_stdout_ ? terminal_safe(piece) : std::string(piece);
              std::fwrite(shown.data(), 1, shown.size(), stdout);
              std::fflush(stdout);
            },
        .on_reasoning =
            [&, this](std::string_view piece) {
              if (!show_thinking_) return;
              // A terminal gets it dimmed before the answer; otherwise standard error takes it, so
              // that standard output stays one answer per line.
              std::FILE* out = safe_stdout_ ? stdout : stderr;
              if (!thinking) std::fputs(safe_stdout_ ? "\x1b[2m" : "[thinking] ", out);
              thinking = true;
              const std::string shown = safe_stdout_ ? terminal_safe(piece) : std::string(piece);
              std::fwrite(shown.data(), 1, shown.size(), out);
              std::fflush(out);
            },
        .on_notice = [](std::string_view line) { notice(line); },
        .should_stop = [&sigint] { return sigint.triggered(); },
    };
    Result<TurnResult> result = session_.send(std::move(text), callbacks);
    end_thinking();
    if (!result.ok()) {
      if (!interactive_) std::fputs("\n", stdout);  // still one answer line per turn
      std::fflush(stdout);
      fail(result.status());
      return;
    }
    std::fputs("\n", stdout);
    std::fflush(stdout);
    const TurnStats& stats = result->stats;
    if (stats.finish_reason == FinishReason::abort) {
      notice(result->text.empty() && result->reasoning.empty() ? "stopped before the answer began; the message was not kept"
                                  : "answer stopped; the conversation keeps what was said");
    } else if (stats.finish_reason == FinishReason::length && !result->finish_detail.empty()) {
      notice(fmt::format("answer cut: {}", result->finish_detail));
    }
    if (show_stats_) {
      fmt::print(stderr, "[turn {}: {}, answer {} tokens ({}); {}]\n", session_.totals().turns,
                 prompt_breakdown(stats), stats.completion_tokens, to_string(stats.finish_reason),
                 speed_breakdown(stats));
    }
  }

  void command(const std::string& line) {
    const std::size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
    argument.erase(0, argument.find_first_not_of(" \t"));
    argument.erase(argument.find_last_not_of(" \t") + 1);
    if (name == "/quit" || name == "/exit") {
      quit_ = true;
    } else if (name == "/help") {
      fmt::print(stderr, "{}", kHelp);
    } else if (name == "/clear") {
      session_.clear();
      notice("new conversation");
    } else if (name == "/system") {
      if (argument.empty()) {
        notice(session_.system_prompt().empty() ? "no system prompt (the template's default applies)"
                                                : "system prompt: " + session_.system_prompt());
      } else {
        session_.set_system_prompt(argument == "-" ? "" : valid_utf8(argument));
        notice(argument == "-" ? "system prompt removed" : "system prompt set");
      }
    } else if (name == "/think") {
      if (argument != "hide" && argument != "show") {
        return fail(make_error(ErrorCode::invalid_argument, "/think takes hide or show"));
      }
      show_thinking_ = argument == "show";
      notice(show_thinking_ ? "thinking shown" : "thinking hidden");
    } else if (name == "/stats") {
      fmt::print(stderr, "{}", format_stats(session_));
    } else if (name == "/save" || name == "/load") {
      if (argument.empty()) return fail(make_error(ErrorCode::invalid_argument, "{} needs a file name", name));
      if (name == "/save") {
        const Status saved = write_conversation(session_, argument);
        if (!saved.ok()) return fail(saved);
        notice(fmt::format("saved {} messages to {}", session_.messages().size(), argument));
      } else {
        Result<json::value> value = read_json_file(argument);
        const Status loaded = value.ok() ? session_.load(value.value()) : value.status();
        if (!loaded.ok()) return fail(Status(loaded).with_context(fmt::format("/load {}", argument)));
        notice(fmt::format("loaded {} messages from {}", session_.messages().size(), argument));
      }
    } else {
      fail(make_error(ErrorCode::invalid_argument, "unknown command {} (/help lists the commands)", name));
    }
  }

  ChatSession& session_;
  LineReader& reader_;
  const bool interactive_;
  const bool show_stats_;
  const bool safe_stdout_;  // standard output is a terminal: escape control characters
  bool quit_ = false;
  bool failed_ = false;
  bool show_thinking_ = true;
};

int run_chat(const CommonOptions& common, const ChatCommandOptions& options) {
  auto fail = [](const Status& status) {
    fmt::print(stderr, "error: {}\n", status.message());
    return 1;
  };
  PluginRegistry registry = load_plugins(common);
  auto device = parse_device(common.device);
  if (!device.ok()) return fail(device.status());
  auto served = app::load_served_model(registry, {.model_dir = options.model_dir,
                                                  .device = device.value(),
                                                  .num_threads = common.num_threads,
                                                  .plugin_options_json = common.model_options,
                                                  .chat_template_file = options.chat_template_file,
                                                  .engine = options.engine});
  if (!served.ok()) return fail(served.status());
  if (!served->tokenizer || !served->chat_template) return fail(served->chat_template_status);
  auto reasoning = app::resolve_reasoning_format(options.reasoning_format, "--reasoning-format",
                                                &*served->chat_template, served->tokenizer.get());
  if (!reasoning.ok()) return fail(reasoning.status());

  ChatSettings settings{.sampling = {.temperature = options.temperature,
                                     .top_k = options.top_k,
                                     .top_p = options.top_p,
                                     .min_p = options.min_p,
                                     .repetition_penalty = options.repetition_penalty,
                                     .presence_penalty = options.presence_penalty,
                                     .frequency_penalty = options.frequency_penalty},
                        .max_tokens = options.max_tokens,
                        .reasoning = *reasoning};
  if (Status valid = settings.sampling.validate(served->info.vocab_size); !valid.ok()) return fail(valid);
  ChatSession session(*served->engine, *served->tokenizer, *served->chat_template, std::move(settings));
  session.set_system_prompt(valid_utf8(options.system_prompt));
  if (!options.load_file.empty()) {
    Result<json::value> value = read_json_file(options.load_file);
    const Status loaded = value.ok() ? session.load(value.value()) : value.status();
    if (!loaded.ok()) return fail(Status(loaded).with_context("--load"));
  }

  const bool interactive = isatty(fileno(stdin)) != 0;
  std::unique_ptr<LineReader> reader =
      interactive ? make_editor_reader(stdin, isatty(fileno(stdout)) != 0 ? stdout : stderr)
                  : make_stream_reader(std::cin);
  if (interactive) {
    fmt::print(stderr, "llaisys chat: {} ({} tokens of context). /help for commands, Ctrl-C stops an answer, "
                       "Ctrl-D quits.\n",
               options.model_dir.string(), session.context_tokens());
  }
  return ChatLoop(session, *reader, interactive, options.show_stats).run();
}

}  // namespace

void add_chat_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto options = std::make_shared<ChatCommandOptions>();
  CLI::App* cmd = app.add_subcommand("chat", "talk with a model in the terminal (one message per line when piped)");
  cmd->add_option("--model", options->model_dir, "Hugging Face model directory or GGUF file")->required();
  cmd->add_option("--system", options->system_prompt, "system prompt (default: the chat template's, if any)");
  cmd->add_option("--load", options->load_file, "start from a conversation written by /save");
  cmd->add_option("--chat-template", options->chat_template_file, "a Jinja chat template overriding the model's");
  cmd->add_option("--max-tokens", options->max_tokens, "most tokens per answer (default: until EOS or the context ends)")
      ->check(CLI::Range(1, std::numeric_limits<int32_t>::max()));
  cmd->add_option("--temperature", options->temperature, "sampling temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-p", options->top_p, "nucleus sampling (1: off)")->capture_default_str();
  cmd->add_option("--top-k", options->top_k, "top-k sampling (0: off)")->capture_default_str();
  cmd->add_option("--min-p", options->min_p, "min-p sampling (0: off)")->capture_default_str();
  cmd->add_option("--repetition-penalty", options->repetition_penalty, "(1: off)")->capture_default_str();
  cmd->add_option("--presence-penalty", options->presence_penalty, "(0: off)")->capture_default_str();
  cmd->add_option("--frequency-penalty", options->frequency_penalty, "(0: off)")->capture_default_str();
  cmd->add_flag("--stats", options->show_stats, "print each turn's tokens and speed on standard error");
  cmd->add_option("--reasoning-format", options->reasoning_format,
                  "auto (a model whose template or vocabulary has <think> reasons), deepseek, or none (the raw text)")
      ->capture_default_str();
  app::add_engine_options(*cmd, options->engine);
  app::add_speculative_options(*cmd, options->engine);
  cmd->callback([&common, &exit_code, options] { exit_code = run_chat(common, *options); });
}

}  // namespace llaisys::offline
