// `llaisys-bench tokenizer`: single-thread encode throughput on a mixed English/Chinese/code corpus,
// next to Hugging Face's Rust tokenizer (npm `tokenizers`) encoding the same documents in the same
// run (bench/tokenizer/hf_encode.js). Both must produce the same ids (compared by checksum).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::bench {
namespace {
namespace fs = std::filesystem;

struct TokenizerBenchOptions {
  fs::path model_dir = "tests/data/qwen2-tokenizer";
  fs::path corpus_dir = "bench/tokenizer/corpus";
  fs::path reference_script = "bench/tokenizer/hf_encode.js";
  std::size_t document_bytes = 4096;
  int passes = 5;
  bool reference = true;
};

struct EncodeRun {
  double seconds = 0;  // best pass
  std::size_t tokens = 0;
  std::string checksum;
};

// Documents of about `target` bytes, cut at line ends, from every *.txt file of the corpus.
std::vector<std::string> load_documents(const fs::path& dir, std::size_t target) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> documents;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string line, document;
    while (std::getline(in, line)) {
      document += line;
      document += '\n';
      if (document.size() >= target) documents.push_back(std::exchange(document, {}));
    }
    if (!document.empty()) documents.push_back(std::move(document));
  }
  return documents;
}

std::string fnv1a(const std::vector<std::vector<TokenId>>& all_ids) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& ids : all_ids) {
    for (TokenId id : ids) hash = (hash ^ static_cast<uint64_t>(id)) * 0x100000001b3ULL;
  }
  return fmt::format("{:x}", hash);
}

Result<EncodeRun> run_llaisys(const text::Tokenizer& tokenizer, const std::vector<std::string>& documents, int passes) {
  EncodeRun run{.seconds = 1e300};
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<std::vector<TokenId>> all_ids;
    all_ids.reserve(documents.size());
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& document : documents) {
      auto ids = tokenizer.encode(document);
      if (!ids.ok()) return ids.status();
      all_ids.push_back(std::move(ids).value());
    }
    run.seconds = std::min(run.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (pass == 0) {
      for (const auto& ids : all_ids) run.tokens += ids.size();
      run.checksum = fnv1a(all_ids);
    }
  }
  return run;
}

Result<EncodeRun> run_reference(const TokenizerBenchOptions& options, const std::vector<std::string>& documents) {
  const fs::path documents_path = fs::temp_directory_path() / fmt::format("llaisys-bench-docs-{}.json", ::getpid());
  {
    std::ofstream out(documents_path, std::ios::binary);
    boost::json::array array;
    for (const std::string& d : documents) array.emplace_back(d);
    out << boost::json::serialize(array);
  }
  const std::string command =
      fmt::format("node '{}' '{}' '{}' {}", options.reference_script.string(),
                  (options.model_dir / "tokenizer.json").string(), documents_path.string(), options.passes);
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Status(ErrorCode::io_error, "cannot start node");
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  fs::remove(documents_path);
  if (status != 0) {
    return make_error(ErrorCode::io_error,
                      "the reference ({}) failed; run scripts/install-deps.sh to install its npm package", command);
  }
  boost::system::error_code ec;
  const boost::json::value result = boost::json::parse(output, ec);
  if (ec || !result.is_object()) return make_error(ErrorCode::parse_error, "reference printed '{}'", output);
  const auto& o = result.get_object();
  return EncodeRun{.seconds = o.at("seconds").to_number<double>(),
                   .tokens = static_cast<std::size_t>(o.at("tokens").to_number<int64_t>()),
                   .checksum = std::string(o.at("checksum").as_string())};
}

int run_tokenizer_bench(const TokenizerBenchOptions& options) {
  auto tokenizer = text::Tokenizer::from_model_dir(options.model_dir);
  if (!tokenizer.ok()) {
    fmt::print(stderr, "error: {}\n", tokenizer.status().message());
    return 1;
  }
  const std::vector<std::string> documents = load_documents(options.corpus_dir, options.document_bytes);
  std::size_t bytes = 0;
  for (const auto& d : documents) bytes += d.size();
  if (bytes == 0) {
    fmt::print(stderr, "error: no corpus text in '{}'\n", options.corpus_dir.string());
    return 1;
  }
  fmt::print("corpus: {} documents, {} bytes ({}), best of {} passes, 1 thread\n", documents.size(), bytes,
             options.corpus_dir.string(), options.passes);
  auto ours = run_llaisys(*tokenizer.value(), documents, options.passes);
  if (!ours.ok()) {
    fmt::print(stderr, "error: {}\n", ours.status().message());
    return 1;
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  fmt::print("llaisys:        {:8.2f} MB/s  {:9.0f} tokens/s  ({} tokens, checksum {})\n", mb / ours->seconds,
             static_cast<double>(ours->tokens) / ours->seconds, ours->tokens, ours->checksum);
  if (!options.reference) return 0;
  auto reference = run_reference(options, documents);
  if (!reference.ok()) {
    fmt::print(stderr, "error: {}\n", reference.status().message());
    return 1;
  }
  fmt::print("HF tokenizers:  {:8.2f} MB/s  {:9.0f} tokens/s  ({} tokens, checksum {})\n", mb / reference->seconds,
             static_cast<double>(reference->tokens) / reference->seconds, reference->tokens, reference->checksum);
  const bool same = reference->checksum == ours->checksum && reference->tokens == ours->tokens;
  fmt::print("ratio llaisys / HF: {:.2f}x   ids identical: {}\n", reference->seconds / ours->seconds, same ? "yes" : "NO");
  return same ? 0 : 1;
}

}  // namespace

void add_tokenizer_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TokenizerBenchOptions>();
  CLI::App* cmd = app.add_subcommand("tokenizer", "encode throughput vs Hugging Face tokenizers (same corpus, same run)");
  cmd->add_option("--model", options->model_dir, "directory with tokenizer.json")->capture_default_str();
  cmd->add_option("--corpus", options->corpus_dir, "directory of *.txt corpus files")->capture_default_str();
  cmd->add_option("--reference-script", options->reference_script, "Node script of the reference")->capture_default_str();
  cmd->add_option("--document-bytes", options->document_bytes, "approximate bytes per document")->capture_default_str();
  cmd->add_option("--passes", options->passes, "passes over the corpus; the best is reported")->capture_default_str();
  cmd->add_flag("!--no-reference", options->reference, "skip the Hugging Face reference");
  cmd->callback([options, &exit_code] { exit_code = run_tokenizer_bench(*options); });
}

}  // namespace llaisys::bench
