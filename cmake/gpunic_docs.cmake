# `cmake --build BUILD --target docs`: HTML reference of the installed API (the headers'
# kernel-doc comments) in BUILD/docs/html, where doxygen is found. docs/kerneldoc.sed turns
# kernel-doc's "@param:" and "Return:" into doxygen's \param and \return on the way in.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  return()
endif()
set(GPUNIC_DOXYGEN_INPUT "")
foreach(h IN LISTS gpunic_headers)
  string(APPEND GPUNIC_DOXYGEN_INPUT " \"${h}\"")
endforeach()
string(APPEND GPUNIC_DOXYGEN_INPUT " \"${PROJECT_BINARY_DIR}/include/gpunic/version.h\"")
string(APPEND GPUNIC_DOXYGEN_INPUT " \"${PROJECT_SOURCE_DIR}/examples/README.md\"")
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/Doxyfile @ONLY)
# Inside another project the name is gpunic's own, so it cannot clash with that project's.
if(PROJECT_IS_TOP_LEVEL)
  set(gpunic_docs_target docs)
else()
  set(gpunic_docs_target gpunic_docs)
endif()
add_custom_target(${gpunic_docs_target}
  COMMAND ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/Doxyfile
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  COMMENT "doxygen: API reference in ${PROJECT_BINARY_DIR}/docs/html"
  VERBATIM)
# Every parameter of the installed API documented: the reference builds with no warning.
if(GPUNIC_BUILD_TESTS)
  add_test(NAME docs_api_reference_has_no_warnings
    COMMAND sh -c "'${DOXYGEN_EXECUTABLE}' Doxyfile && if [ -s doxygen-warnings.txt ]; then cat doxygen-warnings.txt; exit 1; fi"
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(docs_api_reference_has_no_warnings PROPERTIES LABELS "docs")
endif()
