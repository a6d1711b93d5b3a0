// llaisys._llaisys: the native half of the Python package, a thin pybind11 layer over the C API
// (include/llaisys/llaisys.h, libllaisys.so). Built over the C API rather than the C++ engine so the
// package depends on one stable, versioned ABI and the engine's C++ symbols stay hidden inside
// libllaisys.so. The Python half (llaisys/*.py) turns what this returns into vLLM's classes.
//
// The GIL is released around every call that can block (open, close, waiting for outputs, text
// functions). Outputs are polled, never delivered by callback, so the engine's thread never needs
// the GIL and closing an engine can never deadlock against Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <llaisys/llaisys.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// A failed C call, carried out of a GIL-released scope and translated to a Python exception
// (see the translator in the module body).
struct capi_error {
  llaisys_status status;
  std::string message;
};

void check(llaisys_status status) {
  // last_error is per thread and this is the thread that made the call.
  if (status != LLAISYS_OK) throw capi_error{status, llaisys_last_error()};
}

// Frees a buffer the library returned.
struct library_buffer_deleter {
  void operator()(void* p) const { llaisys_free(p); }
};
struct output_deleter {
  void operator()(llaisys_output* p) const { llaisys_output_free(p); }
};
using output_ptr = std::unique_ptr<llaisys_output, output_deleter>;

// Text from the engine as str; bytes that are not UTF-8 (a byte token cut short) become U+FFFD.
py::str utf8(const char* data, size_t size) {
  PyObject* s = PyUnicode_DecodeUTF8(data, static_cast<Py_ssize_t>(size), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

// One choice accumulated over a request's outputs.
struct choice_result {
  std::string text;  // bytes; decoded once at the end so no UTF-8 sequence is cut
  std::vector<int32_t> token_ids;
  bool has_logprobs = false;
  double cumulative_logprob = 0.0;
  std::vector<float> logprobs;              // [tokens]
  int32_t num_top = 0;                      // k
  std::vector<int32_t> top_ids;             // [tokens * k]
  std::vector<float> top_logprobs;          // [tokens * k]
  int32_t finish_reason = LLAISYS_FINISH_NONE;
  std::string finish_detail;
};

struct request_result {
  llaisys_request_id request_id = 0;
  std::vector<int32_t> prompt_token_ids;
  std::vector<choice_result> choices;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  bool finished = false;
};

void merge(request_result& result, const llaisys_output& out) {
  result.request_id = out.request_id;
  if (out.prompt_token_ids != nullptr)
    result.prompt_token_ids.assign(out.prompt_token_ids, out.prompt_token_ids + out.num_prompt_token_ids);
  result.prompt_tokens = out.prompt_tokens;
  result.completion_tokens = out.completion_tokens;
  result.cached_tokens = out.cached_tokens;
  result.finished = out.finished != 0;
  for (int32_t c = 0; c < out.num_choices; ++c) {
    const llaisys_choice& in = out.choices[c];
    if (in.index >= static_cast<int32_t>(result.choices.size())) result.choices.resize(in.index + 1);
    choice_result& dst = result.choices[in.index];
    dst.text.append(in.text, in.text_len);
    dst.token_ids.insert(dst.token_ids.end(), in.token_ids, in.token_ids + in.num_tokens);
    if (in.logprobs != nullptr) {
      dst.has_logprobs = true;
      dst.num_top = in.num_top_logprobs;
      for (int32_t t = 0; t < in.num_tokens; ++t) dst.cumulative_logprob += static_cast<double>(in.logprobs[t]);
      dst.logprobs.insert(dst.logprobs.end(), in.logprobs, in.logprobs + in.num_tokens);
      const size_t num_top = static_cast<size_t>(in.num_tokens) * in.num_top_logprobs;
      if (num_top > 0) {
        dst.top_ids.insert(dst.top_ids.end(), in.top_ids, in.top_ids + num_top);
        dst.top_logprobs.insert(dst.top_logprobs.end(), in.top_logprobs, in.top_logprobs + num_top);
      }
    }
    if (in.finish_reason != LLAISYS_FINISH_NONE) {
      dst.finish_reason = in.finish_reason;
      dst.finish_detail = in.finish_detail != nullptr ? in.finish_detail : "";
    }
  }
}

// A plain dict per request; llaisys/outputs.py builds RequestOutput from it.
py::dict to_python(const request_result& r) {
  py::list choices;
  for (size_t i = 0; i < r.choices.size(); ++i) {
    const choice_result& c = r.choices[i];
    py::dict d;
    d["index"] = i;
    d["text"] = utf8(c.text.data(), c.text.size());
    d["token_ids"] = c.token_ids;
    d["finish_reason"] = llaisys_finish_reason_name(c.finish_reason);
    d["finish_detail"] = c.finish_detail;
    if (c.has_logprobs) {
      d["cumulative_logprob"] = c.cumulative_logprob;
      // vLLM's SampleLogprobs: per token, {token_id: logprob} with the sampled token and the top k.
      py::list per_token;
      for (size_t t = 0; t < c.token_ids.size(); ++t) {
        py::dict entry;
        for (int32_t k = 0; k < c.num_top; ++k) {
          const int32_t id = c.top_ids[t * c.num_top + k];
          if (id >= 0) entry[py::int_(id)] = c.top_logprobs[t * c.num_top + k];
        }
        entry[py::int_(c.token_ids[t])] = c.logprobs[t];
        per_token.append(entry);
      }
      d["logprobs"] = per_token;
    } else {
      d["cumulative_logprob"] = py::none();
      d["logprobs"] = py::none();
    }
    choices.append(d);
  }
  py::dict out;
  out["request_id"] = r.request_id;
  out["prompt_token_ids"] = r.prompt_token_ids;
  out["outputs"] = choices;
  out["finished"] = r.finished;
  out["prompt_tokens"] = r.prompt_tokens;
  out["completion_tokens"] = r.completion_tokens;
  out["num_cached_tokens"] = r.cached_tokens;
  return out;
}

// The C struct from a llaisys.SamplingParams (read by attribute, so the Python class owns the
// defaults and the engine owns the checks); `stop` keeps the strings the struct points into alive.
struct c_params {
  llaisys_sampling_params params{};
  std::vector<std::string> stop;
  std::vector<const char*> stop_ptrs;
  std::vector<int32_t> stop_token_ids;
};

c_params to_c_params(const py::handle& sp) {
  c_params out;
  llaisys_sampling_params_init(&out.params);
  llaisys_sampling_params& p = out.params;
  auto get = [&](const char* name) { return sp.attr(name); };
  p.max_tokens = get("max_tokens").is_none() ? INT32_MAX : get("max_tokens").cast<int32_t>();
  p.min_tokens = get("min_tokens").cast<int32_t>();
  p.n = get("n").cast<int32_t>();
  p.temperature = get("temperature").cast<float>();
  p.top_p = get("top_p").cast<float>();
  p.top_k = get("top_k").cast<int32_t>();
  p.min_p = get("min_p").cast<float>();
  p.repetition_penalty = get("repetition_penalty").cast<float>();
  p.presence_penalty = get("presence_penalty").cast<float>();
  p.frequency_penalty = get("frequency_penalty").cast<float>();
  p.seed = get("seed").is_none() ? -1 : get("seed").cast<int64_t>();
  p.ignore_eos = get("ignore_eos").cast<bool>() ? 1 : 0;
  p.logprobs = get("logprobs").is_none() ? -1 : get("logprobs").cast<int32_t>();
  p.skip_special_tokens = get("skip_special_tokens").cast<bool>() ? 1 : 0;
  out.stop = get("stop").cast<std::vector<std::string>>();
  for (const std::string& s : out.stop) out.stop_ptrs.push_back(s.c_str());
  p.stop = out.stop_ptrs.empty() ? nullptr : out.stop_ptrs.data();
  p.num_stop = static_cast<int32_t>(out.stop_ptrs.size());
  out.stop_token_ids = get("stop_token_ids").cast<std::vector<int32_t>>();
  p.stop_token_ids = out.stop_token_ids.empty() ? nullptr : out.stop_token_ids.data();
  p.num_stop_token_ids = static_cast<int32_t>(out.stop_token_ids.size());
  return out;
}

// Outputs of streamed requests (AsyncLLM): the engine thread's callback queues them and writes a
// byte to a pipe; the asyncio loop watches the pipe's read end (loop.add_reader) and drains the
// queue. So the engine thread never takes the GIL, and Python wakes once per batch of outputs, not
// per token.
class OutputQueue {
 public:
  OutputQueue() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw capi_error{LLAISYS_ERR_INTERNAL, "pipe2 failed"};
  }
  ~OutputQueue() {
    close(fds_[0]);
    close(fds_[1]);
  }
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  static void on_output(void* user, llaisys_output* output) {
    auto* self = static_cast<OutputQueue*>(user);
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->outputs_.emplace_back(output);
    }
    // A full pipe already wakes the reader; a lost byte loses nothing.
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = write(self->fds_[1], &byte, 1);
  }

  int read_fd() const { return fds_[0]; }

  std::deque<output_ptr> take() {
    char buffer[256];
    while (read(fds_[0], buffer, sizeof buffer) > 0) {
    }
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(outputs_, {});
  }

 private:
  int fds_[2] = {-1, -1};
  std::mutex mutex_;
  std::deque<output_ptr> outputs_;
};

// One open engine. close() is idempotent; the destructor closes an engine nobody closed (the
// engine's thread holds no Python state, so that is safe whenever the wrapper is collected).
class Engine {
 public:
  Engine(const std::string& model, const std::optional<std::string>& options_json) {
    py::gil_scoped_release release;
    check(llaisys_engine_open(model.c_str(), options_json ? options_json->c_str() : nullptr, &engine_));
  }
  ~Engine() {
    // Outside Python's control (collection or teardown): release the GIL only if we hold it.
    if (engine_ != nullptr) {
      if (PyGILState_Check()) {
        py::gil_scoped_release release;
        llaisys_engine_close(std::exchange(engine_, nullptr));
      } else {
        llaisys_engine_close(std::exchange(engine_, nullptr));
      }
    }
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void close() {
    if (engine_ == nullptr) return;
    py::gil_scoped_release release;
    llaisys_engine_close(std::exchange(engine_, nullptr));
  }
  bool closed() const { return engine_ == nullptr; }

  llaisys_request_id submit(const py::object& text, const py::object& token_ids, const py::object& messages_json,
                            const py::object& chat_template_kwargs_json, const py::handle& sampling_params,
                            bool stream) {
    llaisys_engine* engine = get();
    llaisys_prompt prompt{.struct_size = sizeof(llaisys_prompt)};
    std::string text_s, messages_s, kwargs_s;
    std::vector<int32_t> ids;
    if (!text.is_none()) {
      text_s = text.cast<std::string>();
      prompt.text = text_s.c_str();
    }
    if (!token_ids.is_none()) {
      ids = token_ids.cast<std::vector<int32_t>>();
      prompt.token_ids = ids.data();
      prompt.num_token_ids = static_cast<int32_t>(ids.size());
    }
    if (!messages_json.is_none()) {
      messages_s = messages_json.cast<std::string>();
      prompt.messages_json = messages_s.c_str();
    }
    if (!chat_template_kwargs_json.is_none()) {
      kwargs_s = chat_template_kwargs_json.cast<std::string>();
      prompt.chat_template_kwargs_json = kwargs_s.c_str();
    }
    const c_params params = to_c_params(sampling_params);
    llaisys_request_id id = 0;
    if (stream) {
      check(llaisys_engine_submit(engine, &prompt, &params.params, &OutputQueue::on_output, &stream_, &id));
    } else {
      check(llaisys_engine_submit(engine, &prompt, &params.params, nullptr, nullptr, &id));
    }
    return id;
  }

  // Waits for every request to finish and returns their results in the order of `ids`. The GIL is
  // released while waiting; every 100 ms it is taken back to let Ctrl-C through, which aborts the
  // requests (so they leave the engine) before the KeyboardInterrupt propagates.
  py::list collect(const std::vector<llaisys_request_id>& ids) {
    llaisys_engine* engine = get();
    std::vector<request_result> results(ids.size());
    bool interrupted = false;
    {
      py::gil_scoped_release release;
      using clock = std::chrono::steady_clock;
      auto next_signal_check = clock::now() + std::chrono::milliseconds(100);
      for (size_t i = 0; i < ids.size(); ++i) {
        while (!results[i].finished) {
          llaisys_output* raw = nullptr;
          check(llaisys_engine_poll(engine, ids[i], 100, &raw));
          if (raw != nullptr) {
            output_ptr out(raw);
            merge(results[i], *out);
          }
          // By the clock, not on timeouts: a request that outputs every step never times out.
          if (!interrupted && clock::now() >= next_signal_check) {
            next_signal_check = clock::now() + std::chrono::milliseconds(100);
            py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0) {
              interrupted = true;
              // Abort all; keep polling so each request delivers its final output and is forgotten.
              for (size_t j = i; j < ids.size(); ++j) llaisys_engine_abort(engine, ids[j]);
            }
          }
        }
      }
    }
    if (interrupted) throw py::error_already_set();
    py::list out;
    for (const request_result& r : results) out.append(to_python(r));
    return out;
  }

  // The outputs of one request since the previous call, merged; None when nothing came within
  // timeout_ms (the streaming primitive AsyncLLM will build on).
  py::object poll(llaisys_request_id id, int32_t timeout_ms) {
    llaisys_engine* engine = get();
    output_ptr out;
    {
      py::gil_scoped_release release;
      llaisys_output* raw = nullptr;
      check(llaisys_engine_poll(engine, id, timeout_ms, &raw));
      out.reset(raw);
    }
    if (!out) return py::none();
    request_result r;
    merge(r, *out);
    return to_python(r);
  }

  // The streamed requests' outputs queued since the previous call, one dict each, in delivery order
  // (a request's outputs stay in order). Works after close, which delivers the final outputs.
  py::list take_streamed() {
    std::deque<output_ptr> outputs = stream_.take();
    py::list out;
    for (const output_ptr& o : outputs) {
      request_result r;
      merge(r, *o);
      out.append(to_python(r));
    }
    return out;
  }
  int stream_fd() const { return stream_.read_fd(); }

  void abort(llaisys_request_id id) { check(llaisys_engine_abort(get(), id)); }

  // Aborts the requests and waits for their final outputs, so none stays in the engine (used when
  // a batch is abandoned half-submitted).
  void discard(const std::vector<llaisys_request_id>& ids) {
    llaisys_engine* engine = get();
    py::gil_scoped_release release;
    for (llaisys_request_id id : ids) llaisys_engine_abort(engine, id);
    for (llaisys_request_id id : ids) {
      for (bool finished = false; !finished;) {
        llaisys_output* raw = nullptr;
        if (llaisys_engine_poll(engine, id, -1, &raw) != LLAISYS_OK) break;
        output_ptr out(raw);
        finished = out && out->finished;
      }
    }
  }

  py::dict stats() const {
    llaisys_stats s{.struct_size = sizeof(llaisys_stats)};
    check(llaisys_engine_stats(get(), &s));
    py::dict d;
    d["num_in_flight"] = s.num_in_flight;
    d["num_unfinished_requests"] = s.num_unfinished_requests;
    d["num_running_seqs"] = s.num_running_seqs;
    d["num_waiting_seqs"] = s.num_waiting_seqs;
    d["kv_block_size"] = s.kv_block_size;
    d["kv_num_blocks"] = s.kv_num_blocks;
    d["kv_num_used_blocks"] = s.kv_num_used_blocks;
    d["kv_num_free_blocks"] = s.kv_num_free_blocks;
    d["kv_num_cached_blocks"] = s.kv_num_cached_blocks;
    d["kv_usage"] = s.kv_usage;
    d["prefix_query_tokens"] = s.prefix_query_tokens;
    d["prefix_hit_tokens"] = s.prefix_hit_tokens;
    d["num_preemptions"] = s.num_preemptions;
    d["num_generated_tokens"] = s.num_generated_tokens;
    d["num_steps"] = s.num_steps;
    return d;
  }

  py::dict info() const {
    llaisys_engine_info i{.struct_size = sizeof(llaisys_engine_info)};
    check(llaisys_engine_get_info(get(), &i));
    py::dict d;
    d["architecture"] = std::string(i.architecture);
    d["vocab_size"] = i.vocab_size;
    d["max_context"] = i.max_context;
    d["max_sequence_tokens"] = i.max_sequence_tokens;
    d["bos_token_id"] = i.bos_token_id >= 0 ? py::object(py::int_(i.bos_token_id)) : py::object(py::none());
    d["eos_token_ids"] = std::vector<int32_t>(i.eos_token_ids, i.eos_token_ids + i.num_eos_token_ids);
    d["has_tokenizer"] = i.has_tokenizer != 0;
    d["chat_template_source"] = std::string(i.chat_template_source);
    return d;
  }

  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const {
    const llaisys_engine* engine = get();
    int32_t* raw = nullptr;
    int32_t n = 0;
    {
      py::gil_scoped_release release;
      check(llaisys_engine_encode(engine, text.c_str(), add_special_tokens ? 1 : 0, &raw, &n));
    }
    std::unique_ptr<int32_t, library_buffer_deleter> ids(raw);
    return {ids.get(), ids.get() + n};
  }

  py::str decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    const llaisys_engine* engine = get();
    char* raw = nullptr;
    size_t len = 0;
    {
      py::gil_scoped_release release;
      check(llaisys_engine_decode(engine, ids.data(), static_cast<int32_t>(ids.size()), skip_special_tokens ? 1 : 0,
                                  &raw, &len));
    }
    std::unique_ptr<char, library_buffer_deleter> text(raw);
    return utf8(text.get(), len);
  }

  std::string apply_chat_template(const std::string& messages_json, const std::optional<std::string>& options_json) const {
    const llaisys_engine* engine = get();
    char* raw = nullptr;
    {
      py::gil_scoped_release release;
      check(llaisys_engine_apply_chat_template(engine, messages_json.c_str(),
                                               options_json ? options_json->c_str() : nullptr, &raw));
    }
    std::unique_ptr<char, library_buffer_deleter> text(raw);
    return text.get();
  }

 private:
  llaisys_engine* get() const {
    if (engine_ == nullptr) throw capi_error{LLAISYS_ERR_CANCELLED, "the engine is closed"};
    return engine_;
  }

  // Declared first: it outlives the engine, whose close delivers the final outputs into it.
  OutputQueue stream_;
  llaisys_engine* engine_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(_llaisys, m) {
  m.doc() = "llaisys C API binding (use the llaisys package, not this module)";

  // The engine's codes as Python's exceptions: a caller's mistake is ValueError, a missing model or
  // file FileNotFoundError, the rest RuntimeError; always with the engine's message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const capi_error& e) {
      PyObject* type = PyExc_RuntimeError;
      if (e.status == LLAISYS_ERR_INVALID_ARGUMENT) type = PyExc_ValueError;
      if (e.status == LLAISYS_ERR_NOT_FOUND) type = PyExc_FileNotFoundError;
      PyErr_SetString(type, e.message.c_str());
    }
  });

  m.def("version", [] {
    const uint32_t v = llaisys_version();
    return py::make_tuple(v >> 16, v & 0xffffu);
  }, "The C API version (major, minor) of the loaded libllaisys.");
  m.def("set_log_level", [](const std::string& level) { check(llaisys_set_log_level(level.c_str())); },
        "Process-wide log level: trace, debug, info, warn, error or off.");

  py::class_<Engine>(m, "Engine")
      .def(py::init<const std::string&, const std::optional<std::string>&>(), py::arg("model"),
           py::arg("options_json") = py::none())
      .def("close", &Engine::close)
      .def_property_readonly("closed", &Engine::closed)
      .def("submit", &Engine::submit, py::arg("text") = py::none(), py::arg("token_ids") = py::none(),
           py::arg("messages_json") = py::none(), py::arg("chat_template_kwargs_json") = py::none(),
           py::arg("sampling_params"), py::arg("stream") = false)
      .def("take_streamed", &Engine::take_streamed)
      .def_property_readonly("stream_fd", &Engine::stream_fd)
      .def("collect", &Engine::collect, py::arg("request_ids"))
      .def("poll", &Engine::poll, py::arg("request_id"), py::arg("timeout_ms"))
      .def("abort", &Engine::abort, py::arg("request_id"))
      .def("discard", &Engine::discard, py::arg("request_ids"))
      .def("stats", &Engine::stats)
      .def("info", &Engine::info)
      .def("encode", &Engine::encode, py::arg("text"), py::arg("add_special_tokens"))
      .def("decode", &Engine::decode, py::arg("token_ids"), py::arg("skip_special_tokens"))
      .def("apply_chat_template", &Engine::apply_chat_template, py::arg("messages_json"),
           py::arg("options_json") = py::none());
}
