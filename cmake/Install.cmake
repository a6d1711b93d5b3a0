# `cmake --install <build> [--prefix P]`: the programs and their plugins, laid out as in the build tree
# (programs find plugins at <exe>/../lib/llaisys/plugins), and the plugin SDK: headers, the static
# libraries a decoder plugin links and the CMake package `llaisys`, so that a plugin outside the tree
# builds with
#
#   find_package(llaisys REQUIRED)                  # CMAKE_PREFIX_PATH=P
#   llaisys_add_plugin(<name> SOURCES <name>.cpp)   # links llaisys::plugin_sdk
#
# (examples/out-of-tree-plugin). Tests, fuzzers and the apps' private libraries are not installed.
# Components: runtime (programs, plugins, their data) and sdk (`cmake --install B --component sdk`
# needs only the SDK's libraries built); the web UI's rule is in webui/CMakeLists.txt.
#
#   bin/llaisys-{offline,server,bench,mkmodel}
#   lib/llaisys/plugins/libllaisys-<name>.so        every llaisys_add_plugin() of the tree
#   share/llaisys/                                  mkmodel's tokenizers, the web UI (webui/CMakeLists.txt)
#   include/llaisys/                                framework/include/llaisys
#   include/llaisys/ops/                            ops/include/llaisys/ops
#   include/llaisys/decoder/                        plugins/common/*.hpp
#   lib/libllaisys_*.a                              core, plugin_sdk, weights, sampling, ops, kernels_cpu,
#                                                   [kernels_cuda,] decoder
#   lib/cmake/llaisys/                              llaisysConfig*.cmake, llaisysTargets*.cmake,
#                                                   LlaisysPlugin.cmake, plugin.map
# The C API (component capi) installs its own rules (capi/CMakeLists.txt): lib/libllaisys.so*,
# include/llaisys/llaisys.h, lib/pkgconfig/llaisys.pc, lib/cmake/llaisys/llaisysCapiTargets*.cmake.
include(CMakePackageConfigHelpers)
set(LLAISYS_INSTALL_CMAKEDIR lib/cmake/llaisys)

# ---- programs and plugins ------------------------------------------------------------------------
set(_programs)
foreach(program llaisys-offline llaisys-server llaisys-bench llaisys-mkmodel llaisys-quantize)
  if(TARGET ${program})
    list(APPEND _programs ${program})
  endif()
endforeach()
get_property(_plugins GLOBAL PROPERTY LLAISYS_PLUGIN_TARGETS)
# Installed files keep the run paths of libraries outside the system's (the CUDA toolkit's).
set_target_properties(${_programs} ${_plugins} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${_programs} RUNTIME DESTINATION bin COMPONENT runtime)
install(TARGETS ${_plugins} LIBRARY DESTINATION lib/llaisys/plugins COMPONENT runtime)
# llaisys-mkmodel copies these into the models it writes (apps/mkmodel/CMakeLists.txt).
install(DIRECTORY ${CMAKE_BINARY_DIR}/share/llaisys/qwen2-tokenizer ${CMAKE_BINARY_DIR}/share/llaisys/stories260K-tokenizer
        DESTINATION share/llaisys COMPONENT runtime)

# ---- the plugin SDK ------------------------------------------------------------------------------
# llaisys::plugin_sdk: what a decoder plugin links, the shared decoder (plugins/common) and all below
# it (the C-table adapter, weights, ops, kernels, core), in C++20.
add_library(llaisys_plugin_sdk_package INTERFACE)
set_target_properties(llaisys_plugin_sdk_package PROPERTIES EXPORT_NAME plugin_sdk)
target_link_libraries(llaisys_plugin_sdk_package INTERFACE llaisys_decoder)
target_compile_features(llaisys_plugin_sdk_package INTERFACE cxx_std_20)

# Every static library it reaches, private links included (an archive's consumers link those too);
# CMake's generate step names any one missing here.
set(_sdk_libraries llaisys_core llaisys_plugin_sdk llaisys_weights llaisys_sampling llaisys_ops llaisys_kernels_cpu
    llaisys_decoder)
if(TARGET llaisys_kernels_cuda)
  list(APPEND _sdk_libraries llaisys_kernels_cuda)
endif()
install(TARGETS ${_sdk_libraries} llaisys_plugin_sdk_package EXPORT llaisysTargets ARCHIVE DESTINATION lib COMPONENT sdk)
install(EXPORT llaisysTargets NAMESPACE llaisys:: DESTINATION ${LLAISYS_INSTALL_CMAKEDIR} COMPONENT sdk)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/framework/include/llaisys ${PROJECT_SOURCE_DIR}/ops/include/llaisys
        DESTINATION include COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugins/common/ DESTINATION include/llaisys/decoder COMPONENT sdk
        FILES_MATCHING PATTERN "*.hpp")

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/llaisysConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/llaisysConfig.cmake INSTALL_DESTINATION ${LLAISYS_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/llaisysConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/llaisysConfig.cmake ${CMAKE_BINARY_DIR}/cmake/llaisysConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/LlaisysPlugin.cmake ${CMAKE_CURRENT_LIST_DIR}/plugin.map
        DESTINATION ${LLAISYS_INSTALL_CMAKEDIR} COMPONENT sdk)
