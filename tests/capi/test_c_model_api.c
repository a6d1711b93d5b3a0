/* The C API's model level (llaisys_model_*) from a C program, using llaisys.h only (compiled as C11).
 *
 * usage: test_c_model_api TINY_QWEN2_DIR CASES_FILE
 *
 * The same model and cases as test_c_api.c. Greedy decoding is written here in C over
 * llaisys_model_forward, with this file managing the KV blocks: every case's tokens equal the
 * reference's; two sequences in one batch each equal their single run; a sequence's blocks copied to
 * fresh blocks with llaisys_model_copy_blocks continue exactly as the original; hidden-state rows
 * come out; bad arguments (a block beyond the pool, a position beyond the context, too small a
 * capacity, NULL batch, ...) are refused with a message, and a valid pass still works afterwards.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llaisys/llaisys.h"
#include "test_common.h"

enum { kBlockSize = 16, kNumBlocks = 256, kMaxCases = 16 };

static llaisys_model_handle* g_model = NULL;
static llaisys_model_props g_info;
static float* g_rows = NULL;  /* room for two logits rows */
static int g_next_block = 0;  /* a bump allocator over the pool, reset per scenario */

/* A sequence as this file tracks it: its tokens so far and its block table. */
typedef struct {
  int32_t tokens[1024];
  int num_tokens;   /* tokens whose K/V are written (positions [0, num_tokens)) */
  int32_t blocks[64];
  int num_blocks;
} sequence;

static void seq_reserve(sequence* s, int positions) {
  while (s->num_blocks * kBlockSize < positions) {
    if (g_next_block >= kNumBlocks || s->num_blocks >= 64) {
      fprintf(stderr, "FATAL: test KV pool exhausted\n");
      exit(1);
    }
    s->blocks[s->num_blocks++] = g_next_block++;
  }
}

static int32_t argmax(const float* row, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (row[i] > row[best]) best = i;  /* ties: the lowest id, as the engine's greedy */
  }
  return best;
}

/* One forward pass appending `num_new[s]` tokens to each of `num_seqs` sequences (new tokens are
 * seqs[s]->tokens[num_tokens .. num_tokens + num_new[s])); each sequence's last new token gives an
 * output row; next[s] gets its argmax. */
static void forward_step(sequence** seqs, const int* num_new, int num_seqs, int32_t* next) {
  int total = 0;
  for (int s = 0; s < num_seqs; ++s) total += num_new[s];
  int32_t* ids = checked_malloc((size_t)total * sizeof(int32_t));
  int32_t* positions = checked_malloc((size_t)total * sizeof(int32_t));
  int32_t* seq_indices = checked_malloc((size_t)total * sizeof(int32_t));
  const int32_t* tables[8];
  int32_t table_lens[8];
  int32_t outputs[8];
  int t = 0;
  for (int s = 0; s < num_seqs; ++s) {
    sequence* q = seqs[s];
    seq_reserve(q, q->num_tokens + num_new[s]);
    for (int i = 0; i < num_new[s]; ++i, ++t) {
      ids[t] = q->tokens[q->num_tokens + i];
      positions[t] = q->num_tokens + i;
      seq_indices[t] = s;
    }
    tables[s] = q->blocks;
    table_lens[s] = q->num_blocks;
    outputs[s] = t - 1;
  }
  llaisys_model_batch batch = {.struct_size = sizeof batch,
                               .num_tokens = total,
                               .token_ids = ids,
                               .positions = positions,
                               .seq_indices = seq_indices,
                               .num_seqs = num_seqs,
                               .block_tables = tables,
                               .block_table_lens = table_lens,
                               .num_outputs = num_seqs,
                               .output_token_indices = outputs,
                               .output_kind = LLAISYS_FORWARD_LOGITS};
  REQUIRE_OK(llaisys_model_forward(g_model, &batch, g_rows, (size_t)num_seqs * (size_t)g_info.vocab_size));
  for (int s = 0; s < num_seqs; ++s) {
    seqs[s]->num_tokens += num_new[s];
    next[s] = argmax(g_rows + (size_t)s * (size_t)g_info.vocab_size, g_info.vocab_size);
  }
  free(ids);
  free(positions);
  free(seq_indices);
}

static void seq_start(sequence* s, const ref_case* c) {
  memset(s, 0, sizeof *s);
  if (c->num_prompt_ids + c->num_greedy > (int)(sizeof s->tokens / sizeof s->tokens[0])) {
    fprintf(stderr, "FATAL: case %s too long for this test\n", c->name);
    exit(1);
  }
  memcpy(s->tokens, c->prompt_ids, (size_t)c->num_prompt_ids * sizeof(int32_t));
}

/* Decodes `steps` more tokens of one sequence whose last token is written to tokens[] but not yet
 * forwarded (one new token per pass); appends them to out. */
static void decode(sequence* s, int steps, int32_t* out) {
  for (int i = 0; i < steps; ++i) {
    const int one = 1;
    int32_t next;
    forward_step(&s, &one, 1, &next);
    s->tokens[s->num_tokens] = next;
    out[i] = next;
  }
}

/* The greedy tokens of a case, alone: the prompt in one pass (its last token's row gives the first
 * token), then one token per pass. */
static void greedy_alone(const ref_case* c, int32_t* out) {
  sequence* s = checked_malloc(sizeof *s);
  seq_start(s, c);
  g_next_block = 0;
  int num_new = c->num_prompt_ids;
  forward_step(&s, &num_new, 1, &out[0]);
  s->tokens[s->num_tokens] = out[0];
  decode(s, c->num_greedy - 1, out + 1);
  free(s);
}

static void check_tokens(const char* what, const char* name, const int32_t* want, const int32_t* got, int n) {
  CHECK(ids_equal(want, n, got, n), "%s: case %s differs", what, name);
  if (!ids_equal(want, n, got, n)) {
    print_ids("want", want, n);
    print_ids("got", got, n);
  }
}

/* ---- the scenarios -------------------------------------------------------------------------------- */

static void test_reference(const ref_case* cases, int num_cases) {
  for (int i = 0; i < num_cases; ++i) {
    int32_t* got = checked_malloc((size_t)cases[i].num_greedy * sizeof(int32_t));
    greedy_alone(&cases[i], got);
    check_tokens("greedy over llaisys_model_forward", cases[i].name, cases[i].greedy, got, cases[i].num_greedy);
    free(got);
  }
  printf("ok: %d reference cases, greedy over llaisys_model_forward\n", num_cases);
}

/* Two sequences in every pass (prefill together, then decode together): each equals its single run. */
static void test_two_in_a_batch(const ref_case* a, const ref_case* b) {
  sequence* seqs[2] = {checked_malloc(sizeof(sequence)), checked_malloc(sizeof(sequence))};
  seq_start(seqs[0], a);
  seq_start(seqs[1], b);
  g_next_block = 0;
  int32_t got[2][256];
  int num_new[2] = {a->num_prompt_ids, b->num_prompt_ids};
  const int steps = a->num_greedy < b->num_greedy ? a->num_greedy : b->num_greedy;
  for (int step = 0; step < steps && step < 256; ++step) {
    int32_t next[2];
    forward_step(seqs, num_new, 2, next);
    for (int s = 0; s < 2; ++s) {
      seqs[s]->tokens[seqs[s]->num_tokens] = next[s];
      got[s][step] = next[s];
      num_new[s] = 1;
    }
  }
  check_tokens("two sequences in one batch", a->name, a->greedy, got[0], steps);
  check_tokens("two sequences in one batch", b->name, b->greedy, got[1], steps);
  free(seqs[0]);
  free(seqs[1]);
  printf("ok: %s and %s in one batch equal their single runs\n", a->name, b->name);
}

/* Decode half, copy the sequence's blocks to fresh ones (first filled with another prompt's K/V, so
 * a copy that did nothing could not pass), continue from the copy and from the original: both equal
 * the reference's second half. */
static void test_copy_blocks(const ref_case* c, const ref_case* other) {
  sequence* original = checked_malloc(sizeof *original);
  sequence* copy = checked_malloc(sizeof *copy);
  seq_start(original, c);
  g_next_block = 0;
  const int half = c->num_greedy / 2;
  int32_t* got = checked_malloc((size_t)c->num_greedy * sizeof(int32_t));
  int num_new = c->num_prompt_ids;
  int32_t next;
  sequence* seqs[1] = {original};
  forward_step(seqs, &num_new, 1, &next);
  original->tokens[original->num_tokens] = next;
  got[0] = next;
  decode(original, half - 1, got + 1);
  check_tokens("before the copy", c->name, c->greedy, got, half);

  /* fresh blocks, beyond every block the original uses */
  *copy = *original;
  copy->num_blocks = 0;
  seq_reserve(copy, original->num_blocks * kBlockSize);
  sequence* scratch = checked_malloc(sizeof *scratch);
  seq_start(scratch, other);
  memcpy(scratch->blocks, copy->blocks, (size_t)copy->num_blocks * sizeof(int32_t));
  scratch->num_blocks = copy->num_blocks;
  int scratch_tokens = copy->num_blocks * kBlockSize;
  if (scratch_tokens > other->num_prompt_ids) scratch_tokens = other->num_prompt_ids;
  int32_t ignored;
  forward_step(&scratch, &scratch_tokens, 1, &ignored);
  CHECK(scratch->num_blocks == copy->num_blocks, "the scratch prompt took blocks of its own");
  free(scratch);
  llaisys_kv_block_copy copies[64];
  for (int b = 0; b < original->num_blocks; ++b) {
    copies[b].src = original->blocks[b];
    copies[b].dst = copy->blocks[b];
    CHECK(copies[b].src != copies[b].dst, "block %d copied onto itself", b);
  }
  REQUIRE_OK(llaisys_model_copy_blocks(g_model, copies, original->num_blocks));

  const int rest = c->num_greedy - half;
  decode(copy, rest, got + half);
  check_tokens("continued from the copied blocks", c->name, c->greedy, got, c->num_greedy);
  decode(original, rest, got + half);
  check_tokens("continued from the original blocks", c->name, c->greedy, got, c->num_greedy);
  free(got);
  free(original);
  free(copy);
  printf("ok: %s continues identically from copied KV blocks\n", c->name);
}

/* Hidden-state rows: one per output, hidden_size wide, finite, and the same alone or in a batch. */
static void test_hidden(const ref_case* c) {
  g_next_block = 0;
  sequence* s = checked_malloc(sizeof *s);
  seq_start(s, c);
  seq_reserve(s, c->num_prompt_ids);
  const int n = c->num_prompt_ids;
  int32_t* positions = checked_malloc((size_t)n * sizeof(int32_t));
  int32_t* seq_indices = checked_malloc((size_t)n * sizeof(int32_t));
  for (int i = 0; i < n; ++i) {
    positions[i] = i;
    seq_indices[i] = 0;
  }
  const int32_t* tables[1] = {s->blocks};
  int32_t table_lens[1] = {s->num_blocks};
  int32_t outputs[2] = {0, n - 1};
  llaisys_model_batch batch = {.struct_size = sizeof batch, .num_tokens = n, .token_ids = s->tokens,
                               .positions = positions, .seq_indices = seq_indices, .num_seqs = 1,
                               .block_tables = tables, .block_table_lens = table_lens, .num_outputs = 2,
                               .output_token_indices = outputs, .output_kind = LLAISYS_FORWARD_HIDDEN};
  const size_t width = (size_t)g_info.hidden_size;
  float* rows = checked_malloc(2 * width * sizeof(float));
  llaisys_status status = llaisys_model_forward(g_model, &batch, rows, 2 * width - 1);
  CHECK(status == LLAISYS_ERR_INVALID_ARGUMENT && strstr(llaisys_last_error(), "too small") != NULL,
        "hidden rows with too little room: %s: %s", llaisys_status_name(status), llaisys_last_error());
  status = llaisys_model_forward(g_model, &batch, rows, 2 * width);
  CHECK(status == LLAISYS_OK, "hidden rows: %s: %s", llaisys_status_name(status), llaisys_last_error());
  if (status == LLAISYS_OK) {
    int finite = 1, nonzero = 0;
    for (size_t i = 0; i < 2 * width; ++i) {
      finite &= isfinite(rows[i]) != 0;
      nonzero |= rows[i] != 0.0f;
    }
    CHECK(finite && nonzero, "hidden rows are not finite and nonzero");
    CHECK(memcmp(rows, rows + width, width * sizeof(float)) != 0, "two tokens with the same hidden state");
    printf("ok: hidden-state rows (%d floats each)\n", g_info.hidden_size);
  }
  free(rows);
  free(positions);
  free(seq_indices);
  free(s);
}

/* Expects `status` to be INVALID_ARGUMENT with `needle` in the message. */
static void expect_refused(llaisys_status status, const char* needle, const char* what) {
  CHECK(status == LLAISYS_ERR_INVALID_ARGUMENT, "%s: got %s (%s)", what, llaisys_status_name(status),
        llaisys_last_error());
  CHECK(strstr(llaisys_last_error(), needle) != NULL, "%s: message '%s' does not mention '%s'", what,
        llaisys_last_error(), needle);
  printf("  refused %s: %s\n", what, llaisys_last_error());
}

static void test_bad_arguments(const ref_case* c) {
  int32_t ids[2] = {c->prompt_ids[0], c->prompt_ids[1]};
  int32_t positions[2] = {0, 1};
  int32_t seq_indices[2] = {0, 0};
  int32_t blocks[1] = {0};
  const int32_t* tables[1] = {blocks};
  int32_t table_lens[1] = {1};
  int32_t outputs[1] = {1};
  const llaisys_model_batch good = {.struct_size = sizeof good, .num_tokens = 2, .token_ids = ids,
                                    .positions = positions, .seq_indices = seq_indices, .num_seqs = 1,
                                    .block_tables = tables, .block_table_lens = table_lens, .num_outputs = 1,
                                    .output_token_indices = outputs, .output_kind = LLAISYS_FORWARD_LOGITS};
  const size_t vocab = (size_t)g_info.vocab_size;
  llaisys_model_batch batch;

  expect_refused(llaisys_model_forward(g_model, NULL, g_rows, vocab), "batch", "a NULL batch");
  expect_refused(llaisys_model_forward(NULL, &good, g_rows, vocab), "model", "a NULL model");
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab - 1), "too small", "too small a capacity");
  expect_refused(llaisys_model_forward(g_model, &good, NULL, vocab), "rows_out", "NULL rows");
  batch = good;
  batch.struct_size = 0;
  expect_refused(llaisys_model_forward(g_model, &batch, g_rows, vocab), "struct_size", "an unset struct_size");
  blocks[0] = kNumBlocks;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "outside the KV pool", "a block beyond the pool");
  blocks[0] = -5;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "outside the KV pool", "a negative block");
  blocks[0] = 0;
  positions[0] = g_info.max_context;
  positions[1] = g_info.max_context + 1;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "outside the context",
                 "a position beyond the context");
  positions[0] = 0;
  positions[1] = kBlockSize;  /* not consecutive, and beyond the one block */
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "position", "a position the table does not cover");
  positions[1] = 1;
  ids[1] = g_info.vocab_size;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "vocabulary", "a token outside the vocabulary");
  ids[1] = c->prompt_ids[1];
  outputs[0] = 2;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "output", "an output index beyond the tokens");
  outputs[0] = 1;
  seq_indices[1] = 1;
  expect_refused(llaisys_model_forward(g_model, &good, g_rows, vocab), "sequence index", "a sequence index beyond num_seqs");
  seq_indices[1] = 0;
  batch = good;
  batch.token_ids = NULL;
  expect_refused(llaisys_model_forward(g_model, &batch, g_rows, vocab), "batch", "NULL token ids");
  batch = good;
  batch.output_kind = 7;
  expect_refused(llaisys_model_forward(g_model, &batch, g_rows, vocab), "output kind", "an unknown output kind");
  batch = good;
  batch.num_tokens = -1;
  expect_refused(llaisys_model_forward(g_model, &batch, g_rows, vocab), "negative", "a negative token count");
  const int32_t* null_tables[1] = {NULL};
  batch = good;
  batch.block_tables = null_tables;
  expect_refused(llaisys_model_forward(g_model, &batch, g_rows, vocab), "NULL", "a NULL block table");

  llaisys_kv_block_copy copy = {.src = 0, .dst = kNumBlocks};
  expect_refused(llaisys_model_copy_blocks(g_model, &copy, 1), "outside the KV pool", "a copy beyond the pool");
  copy.dst = 1;
  copy.src = -1;
  expect_refused(llaisys_model_copy_blocks(g_model, &copy, 1), "outside the KV pool", "a copy from a negative block");
  expect_refused(llaisys_model_copy_blocks(g_model, NULL, 1), "copies", "NULL copies");
  expect_refused(llaisys_model_copy_blocks(g_model, &copy, -1), "count", "a negative copy count");
  CHECK(llaisys_model_copy_blocks(g_model, NULL, 0) == LLAISYS_OK, "no copies: %s", llaisys_last_error());

  expect_refused(llaisys_model_init_kv_cache(g_model, 0, kBlockSize, 0), "num_blocks", "an empty KV pool");
  expect_refused(llaisys_model_init_kv_cache(g_model, kNumBlocks, 0, 0), "block_size", "a zero block size");
  expect_refused(llaisys_model_init_kv_cache(NULL, kNumBlocks, kBlockSize, 0), "model", "init on a NULL model");
  expect_refused(llaisys_model_get_info(g_model, NULL), "llaisys_model_props", "info into NULL");

  /* Nothing above changed anything: the valid batch still runs. */
  REQUIRE_OK(llaisys_model_forward(g_model, &good, g_rows, vocab));
  printf("ok: bad arguments refused with messages\n");
}

static void test_open_errors(const char* model_dir) {
  llaisys_model_handle* model = (llaisys_model_handle*)0x1;  /* must stay untouched on failure */
  expect_refused(llaisys_model_open(NULL, NULL, &model), "model_path", "a NULL path");
  expect_refused(llaisys_model_open(model_dir, "{\"max_num_seqs\": 4}", &model), "max_num_seqs",
                 "an engine-only option");
  expect_refused(llaisys_model_open(model_dir, "[1]", &model), "object", "options that are not an object");
  expect_refused(llaisys_model_open(model_dir, "{\"threads\": -1}", &model), "threads", "negative threads");
  llaisys_status status = llaisys_model_open("/nonexistent/model", NULL, &model);
  CHECK(status == LLAISYS_ERR_NOT_FOUND && strstr(llaisys_last_error(), "/nonexistent/model") != NULL,
        "a missing model: %s: %s", llaisys_status_name(status), llaisys_last_error());
  CHECK(model == (llaisys_model_handle*)0x1, "a failed open wrote its out-parameter");
  llaisys_model_close(NULL);
  printf("ok: open refuses bad options and missing models\n");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s TINY_QWEN2_DIR CASES_FILE\n", argv[0]);
    return 2;
  }
  CHECK(llaisys_version() >> 16 == LLAISYS_API_VERSION_MAJOR && (llaisys_version() & 0xffff) >= 1,
        "library version %u", llaisys_version());
  static ref_case cases[kMaxCases];
  const int num_cases = read_cases(argv[2], cases, kMaxCases);
  CHECK(num_cases >= 2, "%d cases in %s", num_cases, argv[2]);
  if (num_cases < 2) return 1;

  test_open_errors(argv[1]);
  REQUIRE_OK(llaisys_model_open(argv[1], "{\"model_options\": {\"matmul\": \"f32\"}}", &g_model));
  g_info.struct_size = sizeof g_info;
  REQUIRE_OK(llaisys_model_get_info(g_model, &g_info));
  printf("model: %s, vocab %d, hidden %d, context %d, %d layers, %d KV heads x %d, %llu KV bytes per token\n",
         g_info.architecture, g_info.vocab_size, g_info.hidden_size, g_info.max_context, g_info.num_layers,
         g_info.num_kv_heads, g_info.head_dim, (unsigned long long)g_info.kv_bytes_per_token);
  CHECK(g_info.struct_size == sizeof g_info, "info struct_size %u", g_info.struct_size);
  CHECK(g_info.vocab_size > 0 && g_info.hidden_size > 0 && g_info.num_layers > 0 && g_info.max_context > 0 &&
            g_info.kv_bytes_per_token > 0 && g_info.architecture[0] != '\0' && g_info.num_eos_token_ids > 0,
        "incomplete model info");
  g_rows = checked_malloc(2 * (size_t)g_info.vocab_size * sizeof(float));

  const int32_t token = cases[0].prompt_ids[0], position = 0, seq = 0, block = 0, block_len = 1, output = 0;
  const int32_t* table = &block;
  const llaisys_model_batch early = {.struct_size = sizeof early, .num_tokens = 1, .token_ids = &token,
                                     .positions = &position, .seq_indices = &seq, .num_seqs = 1,
                                     .block_tables = &table, .block_table_lens = &block_len, .num_outputs = 1,
                                     .output_token_indices = &output, .output_kind = LLAISYS_FORWARD_LOGITS};
  expect_refused(llaisys_model_forward(g_model, &early, g_rows, (size_t)g_info.vocab_size), "init_kv_cache",
                 "a forward pass before the KV cache");
  REQUIRE_OK(llaisys_model_init_kv_cache(g_model, kNumBlocks, kBlockSize, 0));

  test_reference(cases, num_cases);
  test_two_in_a_batch(&cases[0], &cases[1]);
  test_two_in_a_batch(&cases[4 < num_cases ? 4 : 1], &cases[0]);
  int longest = 0;
  for (int i = 1; i < num_cases; ++i) {
    if (cases[i].num_prompt_ids > cases[longest].num_prompt_ids) longest = i;
  }
  test_copy_blocks(&cases[0], &cases[longest]);
  test_hidden(&cases[0]);
  test_bad_arguments(&cases[0]);
  test_reference(cases, 1);  /* still right after all the refusals */

  llaisys_model_close(g_model);
  free(g_rows);
  for (int i = 0; i < num_cases; ++i) {
    free(cases[i].source);
    free(cases[i].rendered);
    free(cases[i].prompt_ids);
    free(cases[i].greedy);
  }
  if (g_failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("all model API checks passed\n");
  return 0;
}
