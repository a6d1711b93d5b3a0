# Every third-party dependency comes from Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.81.0 EXACT REQUIRED COMPONENTS json CONFIG)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
if(LLAISYS_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()

# Boost.Asio/Beast are header-only; keep the deprecated bits out so we only use the current API.
add_library(llaisys_boost INTERFACE)
target_link_libraries(llaisys_boost INTERFACE Boost::headers Boost::json)
target_compile_definitions(llaisys_boost INTERFACE BOOST_ASIO_NO_DEPRECATED BOOST_BEAST_USE_STD_STRING_VIEW)
