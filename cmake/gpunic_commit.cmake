# Script mode (cmake -P), run at every build by the gpunic_commit target (src/CMakeLists.txt):
# writes OUTPUT from TEMPLATE with the commit of SOURCE_DIR, and rewrites it only when that
# changed, so an unchanged tree relinks nothing.
#   -DSOURCE_DIR= -DTEMPLATE= -DOUTPUT= -DGPUNIC_VERSION= [-DGPUNIC_COMMIT=fallback]
set(commit "")
find_program(git_exe git)
if(git_exe)
  # Only a checkout of gpunic itself: a copy vendored inside another repository must not
  # report that one's commit.
  execute_process(COMMAND ${git_exe} -C ${SOURCE_DIR} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" src)
  endif()
  if(rc EQUAL 0 AND top STREQUAL src)
    # --no-optional-locks: reading the state must never take the index lock from whoever is
    # working in the tree (git describe --dirty would refresh the index), hence status.
    execute_process(COMMAND ${git_exe} -C ${SOURCE_DIR} describe --always --abbrev=12
                    OUTPUT_VARIABLE commit RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${git_exe} --no-optional-locks -C ${SOURCE_DIR}
                            status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc2
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT rc EQUAL 0)
      set(commit "")
    elseif(rc2 EQUAL 0 AND NOT changes STREQUAL "")
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
if(commit STREQUAL "" AND DEFINED GPUNIC_COMMIT AND NOT GPUNIC_COMMIT STREQUAL "")
  set(commit "${GPUNIC_COMMIT}")
endif()
if(commit STREQUAL "")
  set(commit unknown)
endif()
# It goes into a C string: keep what a tag or hash can hold, nothing that needs escaping.
string(REGEX REPLACE "[^A-Za-z0-9._+-]" "_" GPUNIC_COMMIT "${commit}")
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
