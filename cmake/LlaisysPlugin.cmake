set(LLAISYS_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/plugin.map)

# llaisys_add_plugin(<name> SOURCES ... [LIBRARIES ...])
# A plugin is a MODULE library exporting only `llaisys_plugin_entry`; everything else is hidden so
# two plugins (or a plugin and the host) never interpose each other's symbols.
function(llaisys_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${LLAISYS_PLUGIN_OUTPUT_DIR})
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE llaisys_plugin_sdk ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "llaisys-${name}"
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  target_link_options(${name} PRIVATE
    -Wl,--version-script=${LLAISYS_PLUGIN_VERSION_SCRIPT})
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${LLAISYS_PLUGIN_VERSION_SCRIPT})
  if(NOT LLAISYS_SANITIZE)
    # Catch missing symbols at link time rather than at dlopen time.
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  llaisys_warnings(${name})
endfunction()
