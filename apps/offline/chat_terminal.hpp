#pragma once
// The terminal side of `llaisys-offline chat`: reading lines (libedit on a terminal, plain lines
// otherwise), Ctrl-C while an answer streams, and making model text safe to show on a terminal.

#include <cstdio>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace llaisys::offline {

struct InputLine {
  std::string text;          // without the newline
  bool interrupted = false;  // Ctrl-C at the prompt: the line was abandoned
};

class LineReader {
 public:
  virtual ~LineReader() = default;
  // The next line, or std::nullopt at the end of input (Ctrl-D on an empty line, EOF).
  virtual std::optional<InputLine> read(std::string_view prompt) = 0;
  // Makes the line reachable with the Up arrow (editor only).
  virtual void remember(std::string_view /*line*/) {}
};

// Line editing and in-session history by libedit (emacs keys, ~/.editrc honoured). Ctrl-C at the
// prompt abandons the line (no signal is raised while editing); the prompt and echo go to `out`.
// Switches LC_CTYPE to a UTF-8 locale when the environment's is not, so multibyte input edits
// as characters.
std::unique_ptr<LineReader> make_editor_reader(std::FILE* in, std::FILE* out);
// One line per read from a stream (pipes, files); a trailing '\r' is dropped.
std::unique_ptr<LineReader> make_stream_reader(std::istream& in);

// While alive, SIGINT sets a flag (instead of ending the process) that the answer loop polls
// between engine steps; the previous disposition is restored on destruction. The flag is only
// written in the handler: the abort itself happens on the polling thread (LLMEngine::abort takes
// locks and allocates, which a signal handler must not).
class SigintWatch {
 public:
  SigintWatch();
  ~SigintWatch();
  SigintWatch(const SigintWatch&) = delete;
  SigintWatch& operator=(const SigintWatch&) = delete;
  bool triggered() const;
};

// `text` with each ill-formed UTF-8 sequence replaced by U+FFFD (ICU), as the tokenizer would see
// it anyway; typed or piped messages go through this so that what is kept and saved (JSON) is
// valid UTF-8 and equals what the model was given.
std::string valid_utf8(std::string_view text);

// Model text as a terminal may show it: C0 controls other than tab and newline, DEL and the C1
// controls (U+0080..U+009F) become U+FFFD, so a generated escape sequence cannot move the cursor,
// retitle the window or worse. `text` is complete UTF-8 (as the engine's deltas are).
std::string terminal_safe(std::string_view text);

}  // namespace llaisys::offline
