# Man pages from the commands' own --help: help2man turns `gpunic --help` into gpunic.1 and
# `gpunic CMD --help` into gpunic-CMD.1, so a page never says something the help does not.
# Included from apps/CMakeLists.txt: the target gpunic_man writes them into the build tree
# (man/) and `cmake --install` puts them under share/man/man1. Without help2man (Debian package
# help2man) nothing is generated and configure says so.
#
# The same file is the script that writes one page (cmake -P, also used by the CTest
# tests/cli man_page):
#   cmake -DGPUNIC=path/to/gpunic -DCMD=loop|"" -DOUT=page.1 -DHELP2MAN=path -DVERSION=x.y.z
#         -P gpunic_man.cmake
# help2man runs a program with --help; a subcommand gets a wrapper script beside the page.

if(CMAKE_SCRIPT_MODE_FILE)
  if(CMD)
    # help2man names the page after the program it runs: gpunic-CMD, in a folder of its own
    set(prog "${OUT}.d/gpunic-${CMD}")
    file(WRITE "${prog}" "#!/bin/sh\nexec \"${GPUNIC}\" ${CMD} \"$@\"\n")
    file(CHMOD "${prog}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
         GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    # the one-line summary `gpunic help` gives the command
    execute_process(COMMAND "${GPUNIC}" help OUTPUT_VARIABLE list RESULT_VARIABLE rc)
    string(REGEX MATCH "\n  ${CMD} +([^\n]*)" line "${list}")
    set(name "${CMAKE_MATCH_1}")
  else()
    set(prog "${GPUNIC}")
    set(name "a software RoCEv2 NIC with ConnectX queues, for CUDA kernels and CPUs")
  endif()
  if(NOT name)
    message(FATAL_ERROR "gpunic help lists no command '${CMD}'")
  endif()
  execute_process(COMMAND "${HELP2MAN}" --no-info --no-discard-stderr
                          "--version-string=${VERSION}" "--name=${name}" "--output=${OUT}"
                          "${prog}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(CMD)
    file(REMOVE_RECURSE "${OUT}.d")
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man ${CMD}: ${rc} ${err}")
  endif()
  return()
endif()

find_program(GPUNIC_HELP2MAN help2man)
# every command of apps/gpunic/main.c but help and version, which have no options
set(GPUNIC_MAN_COMMANDS sensor loop bench perf decode doctor pingpong immtest)
if(NOT GPUNIC_HELP2MAN)
  message(STATUS "gpunic: help2man not found: no man pages (Debian package help2man)")
  return()
endif()

set(gpunic_man_pages)
foreach(cmd "" ${GPUNIC_MAN_COMMANDS})
  if(cmd)
    set(page ${CMAKE_CURRENT_BINARY_DIR}/man/gpunic-${cmd}.1)
  else()
    set(page ${CMAKE_CURRENT_BINARY_DIR}/man/gpunic.1)
  endif()
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
    COMMAND ${CMAKE_COMMAND} -DGPUNIC=$<TARGET_FILE:gpunic_cli> -DCMD=${cmd} -DOUT=${page}
            -DHELP2MAN=${GPUNIC_HELP2MAN} -DVERSION=${PROJECT_VERSION}
            -P ${PROJECT_SOURCE_DIR}/cmake/gpunic_man.cmake
    DEPENDS gpunic_cli ${PROJECT_SOURCE_DIR}/cmake/gpunic_man.cmake
    COMMENT "help2man: ${page}" VERBATIM)
  list(APPEND gpunic_man_pages ${page})
endforeach()
add_custom_target(gpunic_man ALL DEPENDS ${gpunic_man_pages})
install(FILES ${gpunic_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
