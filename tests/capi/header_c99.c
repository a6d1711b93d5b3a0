/* llaisys.h promises C99: this file is compiled with -std=c99 -pedantic (tests/capi/CMakeLists.txt). */
#include "llaisys/llaisys.h"

/* Something for the translation unit to hold (ISO C forbids an empty one). */
uint32_t test_c_api_header_c99_version(void);
uint32_t test_c_api_header_c99_version(void) { return LLAISYS_API_VERSION; }
