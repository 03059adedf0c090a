# gpunic_add_test_file(<module> <source> [LIBS ...])
# Builds one test executable and registers one CTest per TEST(name) found in the source, named
# <module>_<name>. Each case runs in its own process, so one crash cannot hide other results.
# Exit code 77 means "skipped" (a missing GPU or oracle), never "passed".
function(gpunic_add_test_file module source)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;LABELS" ${ARGN})
  get_filename_component(stem ${source} NAME_WE)
  set(exe ${stem})
  add_executable(${exe} ${source})
  target_link_libraries(${exe} PRIVATE gpunic_test_harness ${T_LIBS})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/${source} lines REGEX "^TEST\\([a-z0-9_]+\\)")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^TEST\\(([a-z0-9_]+)\\).*" "\\1" name "${line}")
    add_test(NAME ${module}_${name} COMMAND ${exe} ${name})
    set_tests_properties(${module}_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT}
                         LABELS "${module};${T_LABELS}")
  endforeach()
endfunction()

# gpunic_add_header_check(<prefix> <source> <label> INCLUDES <dir>...)
# Compiles <source>, a file that includes header-only code and calls it, with no feature macros as
# strict C11 (the C compiler, and clang where it is) and as C++17 (what nvcc's host pass sees), at
# -O2 with warnings as errors: CTests <prefix>_c11_cc, <prefix>_c11_clang and <prefix>_cxx, which
# pass when it compiles.
function(gpunic_add_header_check prefix source label)
  cmake_parse_arguments(H "" "" "INCLUDES" ${ARGN})
  set(flags -O2 -Wall -Wextra -Werror -Wshadow -c -o /dev/null)
  foreach(dir IN LISTS H_INCLUDES)
    list(APPEND flags -I${dir})
  endforeach()
  find_program(GPUNIC_CLANG NAMES clang)
  find_program(GPUNIC_CXX NAMES c++ g++ clang++)
  add_test(NAME ${prefix}_c11_cc COMMAND ${CMAKE_C_COMPILER} -std=c11 ${flags} ${source})
  set_tests_properties(${prefix}_c11_cc PROPERTIES LABELS ${label})
  if(GPUNIC_CLANG)
    add_test(NAME ${prefix}_c11_clang COMMAND ${GPUNIC_CLANG} -std=c11 ${flags} ${source})
    set_tests_properties(${prefix}_c11_clang PROPERTIES LABELS ${label})
  endif()
  if(GPUNIC_CXX)
    add_test(NAME ${prefix}_cxx COMMAND ${GPUNIC_CXX} -std=c++17 -x c++ ${flags} ${source})
    set_tests_properties(${prefix}_cxx PROPERTIES LABELS ${label})
  endif()
endfunction()
