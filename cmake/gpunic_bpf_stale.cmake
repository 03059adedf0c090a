# gpunic_bpf_stale(SRC OBJ): says whether a prebuilt BPF object (GPUNIC_XDP_BPF_OBJECT) was built
# from SRC as it is now. scripts/fetch-debs.sh records the source's SHA-256 beside the object
# (OBJ.src-sha256); without that record only the times are compared, which a copy of the tree to
# another machine may have changed. A stale object still builds, with a warning: the link may then
# fail to open, or behave as the older program did. Used at configure time (gpunic_deps.cmake)
# and at every build that embeds the object (src/link/embed.cmake, script mode).
function(gpunic_bpf_stale src obj)
  set(rebuild "rebuild it on a machine with clang: bash scripts/fetch-debs.sh --bpf-object")
  if(EXISTS "${obj}.src-sha256")
    file(READ "${obj}.src-sha256" recorded)
    string(REGEX MATCH "^[0-9a-f]+" recorded "${recorded}")
    file(SHA256 "${src}" now)
    if(recorded STREQUAL now)
      message(STATUS "gpunic: prebuilt ${obj} matches ${src} (sha256 ${now})")
    else()
      message(WARNING "gpunic: prebuilt ${obj} is STALE: built from a source with sha256 "
                      "${recorded}, ${src} now has ${now}; ${rebuild}")
    endif()
  elseif("${src}" IS_NEWER_THAN "${obj}")
    message(WARNING "gpunic: prebuilt ${obj} may be STALE: no ${obj}.src-sha256 to check, and "
                    "it is not newer than ${src}; ${rebuild}")
  else()
    message(STATUS "gpunic: prebuilt ${obj} is newer than ${src} (no recorded hash to check)")
  endif()
endfunction()
