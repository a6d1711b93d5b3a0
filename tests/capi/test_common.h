/* What the C API's C tests share: failure counting (CHECK, REQUIRE_OK), id helpers and the reader
 * of the reference cases file that tests/capi/CMakeLists.txt writes from
 * tests/data/tiny-qwen2/reference.json. Included by exactly one C file per test program. */
#ifndef LLAISYS_TESTS_CAPI_TEST_COMMON_H_
#define LLAISYS_TESTS_CAPI_TEST_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llaisys/llaisys.h"

static int g_failures = 0;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      ++g_failures;                                                       \
    }                                                                     \
  } while (0)

/* A call that must succeed for the test to go on. */
#define REQUIRE_OK(call)                                                                     \
  do {                                                                                       \
    llaisys_status status_ = (call);                                                         \
    if (status_ != LLAISYS_OK) {                                                             \
      fprintf(stderr, "FATAL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,              \
              llaisys_status_name(status_), llaisys_last_error());                           \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static inline void* checked_malloc(size_t bytes) {
  void* p = malloc(bytes == 0 ? 1 : bytes);
  if (p == NULL) {
    fprintf(stderr, "FATAL: out of memory\n");
    exit(1);
  }
  return p;
}

static inline int ids_equal(const int32_t* a, int num_a, const int32_t* b, int num_b) {
  return num_a == num_b && (num_a == 0 || memcmp(a, b, (size_t)num_a * sizeof(int32_t)) == 0);
}

static inline void print_ids(const char* label, const int32_t* ids, int n) {
  fprintf(stderr, "  %s (%d):", label, n);
  for (int i = 0; i < n; ++i) fprintf(stderr, " %d", ids[i]);
  fputc('\n', stderr);
}

/* ---- the reference cases ------------------------------------------------------------------------ */

typedef struct {
  char name[64];
  int is_messages;   /* source: messages JSON, else raw text */
  char* source;
  char* rendered;
  int32_t* prompt_ids;
  int num_prompt_ids;
  int32_t* greedy;
  int num_greedy;
} ref_case;

static inline char* read_blob(FILE* in, const char* want_key, char* key_out) {
  char key[32];
  size_t bytes = 0;
  if (fscanf(in, "%31s %zu", key, &bytes) != 2 || fgetc(in) != '\n') return NULL;
  if (want_key != NULL && strcmp(key, want_key) != 0) return NULL;
  if (key_out != NULL) strcpy(key_out, key);
  char* blob = checked_malloc(bytes + 1);
  if (fread(blob, 1, bytes, in) != bytes) {
    free(blob);
    return NULL;
  }
  blob[bytes] = '\0';
  return blob;
}

static inline int read_ids(FILE* in, const char* want_key, int32_t** ids, int* count) {
  char key[32];
  if (fscanf(in, "%31s %d", key, count) != 2 || strcmp(key, want_key) != 0 || *count < 0) return 0;
  *ids = checked_malloc((size_t)*count * sizeof(int32_t));
  for (int i = 0; i < *count; ++i) {
    if (fscanf(in, "%d", &(*ids)[i]) != 1) return 0;
  }
  return 1;
}

static inline int read_cases(const char* path, ref_case* cases, int max_cases) {
  FILE* in = fopen(path, "rb");
  if (in == NULL) {
    fprintf(stderr, "FATAL: cannot open %s\n", path);
    exit(1);
  }
  int n = 0;
  char word[16];
  while (n < max_cases && fscanf(in, "%15s", word) == 1) {
    ref_case* c = &cases[n];
    char kind[32] = "";
    if (strcmp(word, "case") != 0 || fscanf(in, "%63s", c->name) != 1 ||
        (c->source = read_blob(in, NULL, kind)) == NULL || (c->rendered = read_blob(in, "rendered", NULL)) == NULL ||
        !read_ids(in, "prompt_ids", &c->prompt_ids, &c->num_prompt_ids) ||
        !read_ids(in, "greedy", &c->greedy, &c->num_greedy)) {
      fprintf(stderr, "FATAL: %s: malformed case %d\n", path, n + 1);
      exit(1);
    }
    c->is_messages = strcmp(kind, "messages") == 0;
    ++n;
  }
  fclose(in);
  return n;
}

#endif /* LLAISYS_TESTS_CAPI_TEST_COMMON_H_ */
