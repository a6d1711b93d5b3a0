#include "chat_terminal.hpp"

#include <histedit.h>
#include <langinfo.h>
#include <unicode/unistr.h>

#include <atomic>
#include <clocale>
#include <csignal>
#include <cstring>

namespace llaisys::offline {
namespace {

// --- libedit -----------------------------------------------------------------------------------

// What the editor's callbacks (plain functions) reach through EL_CLIENTDATA.
struct EditorState {
  std::string prompt;
  bool interrupted = false;
};

EditorState& state_of(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return *static_cast<EditorState*>(data);
}

const char* current_prompt(EditLine* el) { return state_of(el).prompt.c_str(); }

// Bound to Ctrl-C while editing: marks the line abandoned and ends it like Enter does (libedit's
// own newline appends '\n', which el_gets needs to return a non-empty count).
unsigned char abandon_line(EditLine* el, int /*key*/) {
  state_of(el).interrupted = true;
  const LineInfo* line = el_line(el);
  el_cursor(el, static_cast<int>(line->lastchar - line->cursor));
  el_insertstr(el, "\n");
  return CC_NEWLINE;
}

class EditorReader final : public LineReader {
 public:
  EditorReader(std::FILE* in, std::FILE* out) {
    use_utf8_ctype();
    history_ = history_init();
    HistEvent event;
    history(history_, &event, H_SETSIZE, 1000);
    history(history_, &event, H_SETUNIQUE, 1);
    editor_ = el_init("llaisys-chat", in, out, stderr);
    el_set(editor_, EL_CLIENTDATA, &state_);
    el_set(editor_, EL_EDITOR, "emacs");
    el_set(editor_, EL_HIST, history, history_);
    el_set(editor_, EL_PROMPT, current_prompt);
    el_set(editor_, EL_SIGNAL, 1);  // window size changes and suspend/resume while editing
    // The wide call keeps our (static) strings; the narrow el_set copies them and never frees them.
    el_wset(editor_, EL_ADDFN, L"llaisys-abandon-line", L"abandon the line (Ctrl-C)", abandon_line);
    el_set(editor_, EL_BIND, "^C", "llaisys-abandon-line", nullptr);
    // Ctrl-C reaches the editor as a key while editing; answers are streamed in the terminal's
    // normal mode, where it raises SIGINT again (see SigintWatch).
    el_set(editor_, EL_SETTY, "-d", "-isig", nullptr);
    el_source(editor_, nullptr);  // the user's ~/.editrc, if any
  }
  ~EditorReader() override {
    el_end(editor_);
    history_end(history_);
  }
  EditorReader(const EditorReader&) = delete;
  EditorReader& operator=(const EditorReader&) = delete;

  std::optional<InputLine> read(std::string_view prompt) override {
    state_.prompt.assign(prompt);
    state_.interrupted = false;
    int count = 0;
    const char* line = el_gets(editor_, &count);
    if (line == nullptr || count <= 0) return std::nullopt;
    // The line is NUL-terminated multibyte text; strlen avoids relying on how `count` is measured.
    InputLine result{.text = std::string(line), .interrupted = state_.interrupted};
    while (!result.text.empty() && (result.text.back() == '\n' || result.text.back() == '\r')) result.text.pop_back();
    return result;
  }

  void remember(std::string_view line) override {
    HistEvent event;
    const std::string copy(line);
    history(history_, &event, H_ENTER, copy.c_str());
  }

 private:
  static void use_utf8_ctype() {
    if (std::setlocale(LC_CTYPE, "") != nullptr && std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0) return;
    if (std::setlocale(LC_CTYPE, "C.UTF-8") == nullptr) std::setlocale(LC_CTYPE, "");
  }

  EditLine* editor_ = nullptr;
  History* history_ = nullptr;
  EditorState state_;
};

class StreamReader final : public LineReader {
 public:
  explicit StreamReader(std::istream& in) : in_(in) {}
  std::optional<InputLine> read(std::string_view /*prompt*/) override {
    InputLine line;
    if (!std::getline(in_, line.text)) return std::nullopt;
    if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
    return line;
  }

 private:
  std::istream& in_;
};

// --- SIGINT ------------------------------------------------------------------------------------

std::atomic<bool> g_sigint{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT flag must be async-signal-safe");
struct sigaction g_previous_sigint {};

extern "C" void on_sigint(int /*signal*/) { g_sigint.store(true, std::memory_order_relaxed); }

}  // namespace

std::unique_ptr<LineReader> make_editor_reader(std::FILE* in, std::FILE* out) {
  return std::make_unique<EditorReader>(in, out);
}

std::unique_ptr<LineReader> make_stream_reader(std::istream& in) { return std::make_unique<StreamReader>(in); }

SigintWatch::SigintWatch() {
  g_sigint.store(false);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // writes to the terminal just go on
  sigaction(SIGINT, &action, &g_previous_sigint);
}

SigintWatch::~SigintWatch() { sigaction(SIGINT, &g_previous_sigint, nullptr); }

bool SigintWatch::triggered() const { return g_sigint.load(std::memory_order_relaxed); }

std::string valid_utf8(std::string_view text) {
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size()))).toUTF8String(out);
  return out;
}

std::string terminal_safe(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\t' && byte != '\n') || byte == 0x7F) {
      out += kReplacement;
    } else if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += kReplacement;  // U+0080..U+009F, encoded C2 80..C2 9F
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace llaisys::offline
