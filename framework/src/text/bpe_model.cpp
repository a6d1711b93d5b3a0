#include "bpe_model.hpp"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "byte_level.hpp"
#include "json_fields.hpp"
#include "utf8.hpp"

namespace llaisys::text {
namespace json = boost::json;

// ---- word cache -------------------------------------------------------------------------------

bool WordCache::get(std::string_view word, std::vector<TokenId>& out) const {
  Shard& shard = shards_[Hash{}(word) % kShards];
  std::lock_guard lock(shard.mutex);
  auto it = shard.words.find(word);
  if (it == shard.words.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::put(std::string_view word, const TokenId* ids, std::size_t count) const {
  Shard& shard = shards_[Hash{}(word) % kShards];
  std::lock_guard lock(shard.mutex);
  if (shard.words.size() >= kShardCapacity) shard.words.clear();
  shard.words.emplace(std::string(word), std::vector<TokenId>(ids, ids + count));
}

// ---- loading ----------------------------------------------------------------------------------

namespace {

// A merge is "a b" (one space) or ["a", "b"].
Result<std::pair<std::string_view, std::string_view>> merge_parts(const json::value& merge, std::size_t index) {
  if (merge.is_string()) {
    const std::string_view s = merge.get_string();
    const std::size_t space = s.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == s.size() ||
        s.find(' ', space + 1) != std::string_view::npos) {
      return make_error(ErrorCode::parse_error, "merges[{}]: '{}' is not two tokens separated by one space", index, s);
    }
    return std::pair{s.substr(0, space), s.substr(space + 1)};
  }
  if (merge.is_array() && merge.get_array().size() == 2 && merge.get_array()[0].is_string() &&
      merge.get_array()[1].is_string()) {
    return std::pair{std::string_view(merge.get_array()[0].get_string()),
                     std::string_view(merge.get_array()[1].get_string())};
  }
  return make_error(ErrorCode::parse_error, "merges[{}] must be \"a b\" or [\"a\", \"b\"]", index);
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::from_json(const json::object& model) {
  std::unique_ptr<BpeModel> bpe(new BpeModel());
  const json::value* vocab = model.if_contains("vocab");
  if (vocab == nullptr || !vocab->is_object()) return Status(ErrorCode::parse_error, "model: 'vocab' must be an object");
  const json::value* merges = model.if_contains("merges");
  if (merges == nullptr || !merges->is_array()) return Status(ErrorCode::parse_error, "model: 'merges' must be an array");

  constexpr int64_t kMaxId = (int64_t{1} << 28);  // far beyond any real vocabulary
  const json::object& entries = vocab->get_object();
  bpe->vocab_.reserve(entries.size());
  int64_t id_limit = 0;
  for (const auto& entry : entries) {
    if (!entry.value().is_int64() || entry.value().get_int64() < 0 || entry.value().get_int64() >= kMaxId) {
      return make_error(ErrorCode::parse_error, "model.vocab['{}'] must be a token id in [0, {})",
                        std::string_view(entry.key()), kMaxId);
    }
    id_limit = std::max(id_limit, entry.value().get_int64() + 1);
  }
  // Ids index dense tables: a few holes are fine, a sparse vocabulary would only waste memory.
  const auto dense_limit = static_cast<int64_t>(entries.size()) * 2 + 65536;
  if (id_limit > dense_limit) {
    return make_error(ErrorCode::parse_error, "model.vocab: ids up to {} for {} tokens are too sparse", id_limit - 1,
                      entries.size());
  }
  bpe->id_to_token_.resize(static_cast<std::size_t>(id_limit));
  bpe->has_token_.assign(static_cast<std::size_t>(id_limit), false);
  for (const auto& entry : entries) {
    const auto id = static_cast<TokenId>(entry.value().get_int64());
    if (bpe->has_token_[static_cast<std::size_t>(id)]) {
      return make_error(ErrorCode::parse_error, "model.vocab: id {} is used by '{}' and '{}'", id,
                        bpe->id_to_token_[static_cast<std::size_t>(id)], std::string_view(entry.key()));
    }
    bpe->vocab_.insert(entry.key(), id);  // Boost.JSON objects may hold duplicate keys: first wins
    bpe->id_to_token_[static_cast<std::size_t>(id)] = std::string(entry.key());
    bpe->has_token_[static_cast<std::size_t>(id)] = true;
  }

  LLAISYS_ASSIGN_OR_RETURN(bpe->continuing_subword_prefix_, json_fields::string_or(model, "continuing_subword_prefix", ""));
  LLAISYS_ASSIGN_OR_RETURN(bpe->end_of_word_suffix_, json_fields::string_or(model, "end_of_word_suffix", ""));
  LLAISYS_ASSIGN_OR_RETURN(bpe->fuse_unk_, json_fields::bool_or(model, "fuse_unk", false));
  LLAISYS_ASSIGN_OR_RETURN(bpe->byte_fallback_, json_fields::bool_or(model, "byte_fallback", false));
  LLAISYS_ASSIGN_OR_RETURN(bpe->ignore_merges_, json_fields::bool_or(model, "ignore_merges", false));
  LLAISYS_ASSIGN_OR_RETURN(std::string unk, json_fields::string_or(model, "unk_token", ""));
  if (!unk.empty()) {
    const int32_t id = bpe->vocab_.find(unk);
    if (id < 0) return make_error(ErrorCode::parse_error, "model: unk_token '{}' is not in the vocabulary", unk);
    bpe->unk_id_ = id;
  }
  if (const json::value* dropout = model.if_contains("dropout");
      dropout != nullptr && !dropout->is_null() && !(dropout->is_number() && dropout->to_number<double>() == 0.0)) {
    return Status(ErrorCode::unsupported, "model: BPE dropout is not supported");
  }

  const json::array& merge_list = merges->get_array();
  bpe->merges_.reserve(merge_list.size());
  const std::size_t prefix_length = bpe->continuing_subword_prefix_.size();
  for (std::size_t rank = 0; rank < merge_list.size(); ++rank) {
    LLAISYS_ASSIGN_OR_RETURN(auto parts, merge_parts(merge_list[rank], rank));
    const int32_t left = bpe->vocab_.find(parts.first);
    const int32_t right = bpe->vocab_.find(parts.second);
    if (left < 0 || right < 0) {
      return make_error(ErrorCode::parse_error, "merges[{}]: '{}' is not in the vocabulary", rank,
                        left < 0 ? parts.first : parts.second);
    }
    // The merged token drops the right part's continuing-subword prefix (as Hugging Face does).
    std::string merged(parts.first);
    std::string_view right_text = parts.second;
    if (prefix_length > 0 && right_text.starts_with(bpe->continuing_subword_prefix_)) {
      right_text.remove_prefix(prefix_length);
    }
    merged += right_text;
    const int32_t merged_id = bpe->vocab_.find(merged);
    if (merged_id < 0) {
      return make_error(ErrorCode::parse_error, "merges[{}]: the merged token '{}' is not in the vocabulary", rank,
                        merged);
    }
    bpe->merges_.insert(left, right, {.rank = static_cast<int32_t>(rank), .merged_id = merged_id});
  }

  for (unsigned b = 0; b < 256; ++b) {
    bpe->byte_symbol_[b] = bpe->vocab_.find(byte_level::byte_strings()[b]);
  }
  return bpe;
}

// ---- encoding ---------------------------------------------------------------------------------

void BpeModel::initial_symbols(std::string_view piece, bool byte_level, std::vector<TokenId>& symbols) const {
  symbols.clear();
  const bool plain = continuing_subword_prefix_.empty() && end_of_word_suffix_.empty();
  if (byte_level && plain) {
    // Every byte is one alphabet character; absent ones fall through to unk handling below.
    bool all_known = true;
    for (char c : piece) {
      const TokenId id = byte_symbol_[static_cast<uint8_t>(c)];
      all_known &= id >= 0;
      symbols.push_back(id);
    }
    if (all_known) return;
    symbols.clear();
  }
  const std::string mapped = byte_level ? byte_level::encode(piece) : std::string();
  const std::string_view word = byte_level ? std::string_view(mapped) : piece;

  std::optional<std::pair<TokenId, bool>> pending_unk;  // (unk id, fused) not yet emitted
  std::string symbol;
  std::size_t i = 0;
  while (i < word.size()) {
    std::size_t n = utf8::valid_sequence_length(word, i);
    if (n == 0) n = 1;  // cannot happen for validated input; never loop forever
    const bool is_first = i == 0;
    const bool is_last = i + n == word.size();
    symbol.clear();
    if (!is_first) symbol += continuing_subword_prefix_;
    symbol.append(word.substr(i, n));
    if (is_last) symbol += end_of_word_suffix_;
    i += n;
    if (const int32_t id = vocab_.find(symbol); id >= 0) {
      if (pending_unk) symbols.push_back(pending_unk->first);
      pending_unk.reset();
      symbols.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      std::vector<TokenId> bytes;
      for (char c : symbol) {
        const int32_t id = vocab_.find(fmt::format("<0x{:02X}>", static_cast<uint8_t>(c)));
        if (id < 0) break;
        bytes.push_back(id);
      }
      if (bytes.size() == symbol.size()) {
        if (pending_unk) symbols.push_back(pending_unk->first);
        pending_unk.reset();
        symbols.insert(symbols.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk && !fuse_unk_) symbols.push_back(pending_unk->first);
      if (!pending_unk || !fuse_unk_) pending_unk = std::pair{*unk_id_, true};
    }
    // No unk token: the character is dropped, as Hugging Face does.
  }
  if (pending_unk) symbols.push_back(pending_unk->first);
}

// Up to a few hundred symbols: ranks of adjacent pairs in an array, the lowest found by a scan.
void BpeModel::merge_small(std::vector<TokenId>& symbols) const {
  const std::size_t n = symbols.size();
  TokenId ranks_storage[WordCache::kMaxWordBytes];
  TokenId merged_storage[WordCache::kMaxWordBytes];
  int32_t* ranks = ranks_storage;
  int32_t* merged = merged_storage;
  auto refresh = [&](std::size_t i) {
    const PairMap::Merge m = merges_.find(symbols[i], symbols[i + 1]);
    ranks[i] = m.rank < 0 ? INT32_MAX : m.rank;
    merged[i] = m.merged_id;
  };
  std::size_t count = n;
  for (std::size_t i = 0; i + 1 < count; ++i) refresh(i);
  while (count > 1) {
    std::size_t best = 0;
    int32_t best_rank = ranks[0];
    for (std::size_t i = 1; i + 1 < count; ++i) {
      if (ranks[i] < best_rank) {
        best_rank = ranks[i];
        best = i;
      }
    }
    if (best_rank == INT32_MAX) break;
    symbols[best] = merged[best];
    for (std::size_t i = best + 1; i + 1 < count; ++i) {
      symbols[i] = symbols[i + 1];
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --count;
    if (best > 0) refresh(best - 1);
    if (best + 1 < count) refresh(best);
  }
  symbols.resize(count);
}

// Long words: a doubly linked list of symbols and a heap of candidate merges, O(n log n).
void BpeModel::merge_large(std::vector<TokenId>& symbols) const {
  struct Symbol {
    TokenId id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    TokenId merged_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  const auto n = static_cast<int32_t>(symbols.size());
  std::vector<Symbol> list(static_cast<std::size_t>(n));
  for (int32_t i = 0; i < n; ++i) list[static_cast<std::size_t>(i)] = {symbols[static_cast<std::size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, true};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int32_t pos) {
    const Symbol& left = list[static_cast<std::size_t>(pos)];
    if (left.next < 0) return;
    const PairMap::Merge m = merges_.find(left.id, list[static_cast<std::size_t>(left.next)].id);
    if (m.rank >= 0) heap.push({m.rank, pos, m.merged_id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    Symbol& left = list[static_cast<std::size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = list[static_cast<std::size_t>(left.next)];
    const PairMap::Merge m = merges_.find(left.id, right.id);
    if (m.rank != top.rank || m.merged_id != top.merged_id) continue;  // stale candidate
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) list[static_cast<std::size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }
  symbols.clear();
  for (int32_t i = 0; i >= 0 && i < n; i = list[static_cast<std::size_t>(i)].next) {
    symbols.push_back(list[static_cast<std::size_t>(i)].id);
  }
}

void BpeModel::encode_piece(std::string_view piece, bool byte_level, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const int32_t id = byte_level ? vocab_.find(byte_level::encode(piece)) : vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const bool cacheable = piece.size() <= WordCache::kMaxWordBytes;
  if (cacheable && cache_.get(piece, out)) return;
  thread_local std::vector<TokenId> symbols;
  initial_symbols(piece, byte_level, symbols);
  if (symbols.size() <= WordCache::kMaxWordBytes) {
    merge_small(symbols);
  } else {
    merge_large(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) cache_.put(piece, symbols.data(), symbols.size());
}

}  // namespace llaisys::text
