# ASan + UBSan for the asan-ubsan preset (which also turns CUDA off). Applied globally so plugins,
# kernels and tests agree.
if(LLAISYS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
