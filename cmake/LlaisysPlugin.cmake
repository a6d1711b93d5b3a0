# llaisys_add_plugin(<name> SOURCES ... [LIBRARIES ...] [OUTPUT_DIRECTORY dir])
# A plugin is a MODULE library, libllaisys-<name>.so, exporting only `llaisys_plugin_entry`; everything
# else is hidden so two plugins (or a plugin and the host) never interpose each other's symbols.
#
# One definition for the tree and for the installed package (cmake/Install.cmake installs this file
# and plugin.map into lib/cmake/llaisys/; llaisysConfig.cmake includes it). What differs, the includer
# sets before including:
#   LLAISYS_PLUGIN_SDK_TARGET  what every plugin links. The tree: llaisys_plugin_sdk (the C-table
#                              adapter; plugins add llaisys_decoder with LIBRARIES). The package:
#                              llaisys::plugin_sdk (the shared decoder and all below it).
#   LLAISYS_PLUGIN_OUTPUT_DIR  where plugins land without OUTPUT_DIRECTORY. The tree: lib/llaisys/plugins
#                              of the build; the package: unset, CMake's default (the binary dir).
# Each plugin is recorded in the global property LLAISYS_PLUGIN_TARGETS: cmake/Install.cmake installs
# the tree's into lib/llaisys/plugins/.
if(NOT DEFINED LLAISYS_PLUGIN_SDK_TARGET)
  set(LLAISYS_PLUGIN_SDK_TARGET llaisys_plugin_sdk)
endif()

function(llaisys_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${LLAISYS_PLUGIN_OUTPUT_DIR})
  endif()
  # Next to this file, in the tree (cmake/) and in the package (lib/cmake/llaisys/).
  set(version_script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map)
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${LLAISYS_PLUGIN_SDK_TARGET} ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "llaisys-${name}"
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  target_link_options(${name} PRIVATE -Wl,--version-script=${version_script})
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${version_script})
  if(NOT LLAISYS_SANITIZE)
    # Catch missing symbols at link time rather than at dlopen time.
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  if(COMMAND llaisys_warnings)  # the tree's warning level (cmake/Warnings.cmake); not in the package
    llaisys_warnings(${name})
  endif()
  set_property(GLOBAL APPEND PROPERTY LLAISYS_PLUGIN_TARGETS ${name})
endfunction()
