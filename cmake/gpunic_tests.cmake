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
