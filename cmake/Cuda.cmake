# CUDA is on wherever nvcc is found, unless -DLLAISYS_ENABLE_CUDA=OFF.
set(LLAISYS_HAVE_CUDA OFF)
if(LLAISYS_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Ampere (A100) and Hopper (H100/H200) machine code; override with -DCMAKE_CUDA_ARCHITECTURES.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    if(LLAISYS_CCACHE AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${LLAISYS_CCACHE})
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # C++20 like the rest of the project (CUDA_STANDARD follows CXX_STANDARD). CMake learnt nvcc's
    # C++20 flag in 3.26 and Debian 12 has 3.25: tell it the flag.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # The kernels use CCCL 2.8's cuda::minimum, which came with CUDA 12.9.
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.9)
      message(WARNING "llaisys: nvcc ${CMAKE_CUDA_COMPILER_VERSION} is older than 12.9, which the CUDA kernels "
                      "need (CCCL 2.8); building without the CUDA backend")
    else()
      set(LLAISYS_HAVE_CUDA ON)
    endif()
  else()
    message(STATUS "llaisys: nvcc not found, building without the CUDA backend")
  endif()
endif()

# llaisys_cuda_options(<target>): warnings for the .cu files of a target (nvcc's own and the host
# compiler's), errors when LLAISYS_WERROR is on. C++ sources of the target use llaisys_warnings.
# .cu files never include fmt (nor status.hpp): nvcc cannot compile fmt 9's consteval format
# strings, so the Status-returning wrappers live in .cpp files (kernels/cuda/launch.hpp).
function(llaisys_cuda_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow>)
  if(LLAISYS_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()
