# llaisys_warnings(<target>): the project's warning level, errors when LLAISYS_WERROR is on.
add_library(llaisys_warnings INTERFACE)
target_compile_options(llaisys_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Wunused -Woverloaded-virtual -Wdouble-promotion
    -Wno-missing-field-initializers
    -Wformat=2 -Wimplicit-fallthrough -Wmisleading-indentation>
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic>)
if(LLAISYS_WERROR)
  target_compile_options(llaisys_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
endif()

# BUILD_INTERFACE: an installed static library lists its private links too (cmake/Install.cmake);
# the warning level stays in the tree.
function(llaisys_warnings target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:llaisys_warnings>)
endfunction()
