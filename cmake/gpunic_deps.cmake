# Third-party dependencies: each one earns its place (docs/DESIGN.md, "Decisions").
find_package(Threads REQUIRED)

# CRC-32 for the ICRC (src/wire/icrc.c): libdeflate (carry-less multiply), else zlib, which is
# byte-wise on short buffers and is a dependency only for this fallback. The static libdeflate is
# preferred, so the binaries run where the runtime package is missing (the GPU machine builds
# against unpacked .debs: scripts/fetch-debs.sh).
find_path(GPUNIC_LIBDEFLATE_INCLUDE libdeflate.h)
find_library(GPUNIC_LIBDEFLATE_LIBRARY NAMES libdeflate.a deflate)
if(EXISTS "${GPUNIC_LIBDEFLATE_INCLUDE}/libdeflate.h" AND EXISTS "${GPUNIC_LIBDEFLATE_LIBRARY}")
  set(GPUNIC_HAVE_LIBDEFLATE ON)
  message(STATUS "gpunic: ICRC: libdeflate ${GPUNIC_LIBDEFLATE_LIBRARY}")
  # Only tests/wire's ICRC measurement uses zlib now, to compare.
  find_package(ZLIB QUIET)
else()
  set(GPUNIC_HAVE_LIBDEFLATE OFF)
  find_package(ZLIB REQUIRED)
  message(STATUS "gpunic: ICRC: zlib (byte-wise, slower): install libdeflate-dev")
endif()

# rdma-core's mlx5dv.h: the exact ConnectX queue layouts (headers only, never linked).
find_path(GPUNIC_MLX5DV_INCLUDE infiniband/mlx5dv.h)
if(NOT GPUNIC_MLX5DV_INCLUDE)
  message(FATAL_ERROR "infiniband/mlx5dv.h not found: install rdma-core headers (Debian: libibverbs-dev)")
endif()

# libpcap is optional: without it `gpunic decode` and captures report that they are unavailable.
find_path(GPUNIC_PCAP_INCLUDE pcap/pcap.h)
find_library(GPUNIC_PCAP_LIBRARY pcap)
if(GPUNIC_PCAP_INCLUDE AND GPUNIC_PCAP_LIBRARY)
  set(GPUNIC_HAVE_PCAP ON)
  message(STATUS "gpunic: libpcap found: ${GPUNIC_PCAP_LIBRARY}")
else()
  set(GPUNIC_HAVE_PCAP OFF)
  message(STATUS "gpunic: libpcap not found; pcap capture and decode are disabled")
endif()

# Oracles used by tests (optional: tests that need them skip when absent).
find_program(GPUNIC_TSHARK tshark)
find_program(GPUNIC_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)

# The xdp link (src/link/xdp.c) is optional: libxdp for the AF_XDP socket, libbpf to load its
# XDP program, and clang with libbpf's headers to build that program. Without them the link's
# open fails saying why; everything else builds. A machine without clang (the GPU machine) takes
# the program prebuilt: GPUNIC_XDP_BPF_OBJECT, which scripts/fetch-debs.sh makes beside its .debs
# and passes with the libraries from them (shared: Debian's libxdp.a, libbpf.a and libelf.a are
# not position-independent, so they cannot go into libgpunic.so), which the binaries then load
# from there through their RUNPATH.
find_path(GPUNIC_XDP_INCLUDE xdp/xsk.h)
find_path(GPUNIC_BPF_INCLUDE bpf/bpf_helpers.h)
find_library(GPUNIC_XDP_LIBRARY xdp)
find_library(GPUNIC_BPF_LIBRARY bpf)
set(GPUNIC_XDP_BPF_OBJECT "" CACHE FILEPATH
    "Prebuilt xdp_roce.bpf.o (from src/link/xdp_roce.bpf.c) to embed instead of compiling it")
set(missing "")
set(GPUNIC_XDP_LIBRARIES "")  # what the library links for the xdp link, in link order
foreach(v GPUNIC_XDP_INCLUDE GPUNIC_XDP_LIBRARY GPUNIC_BPF_INCLUDE GPUNIC_BPF_LIBRARY)
  if(NOT ${v} OR NOT EXISTS "${${v}}")
    list(APPEND missing ${v})
  endif()
endforeach()
# the prebuilt object, when given, wins over clang (scripts/fetch-debs.sh passes it where there is
# no clang, or with FETCH_DEBS_FORCE=1)
find_program(GPUNIC_BPF_CLANG NAMES clang clang-16 clang-15 clang-14)
if(GPUNIC_XDP_BPF_OBJECT)
  if(NOT EXISTS "${GPUNIC_XDP_BPF_OBJECT}")
    list(APPEND missing "GPUNIC_XDP_BPF_OBJECT (${GPUNIC_XDP_BPF_OBJECT})")
  endif()
elseif(NOT GPUNIC_BPF_CLANG OR NOT EXISTS "${GPUNIC_BPF_CLANG}")
  list(APPEND missing "GPUNIC_BPF_CLANG (or a prebuilt GPUNIC_XDP_BPF_OBJECT)")
endif()
# libbpf's own dependencies. A static libbpf (one built position-independent: Debian's is not)
# brings libelf and zlib to the link. A shared libbpf from outside the system's directories (the
# .debs) loads libelf.so.1 by its soname, which its own search does not look for there: given a
# GPUNIC_ELF_LIBRARY, libgpunic links it although it calls none of it (--no-as-needed), so it is
# loaded first, from the binaries' RUNPATH, and libbpf's need is met by it.
set(GPUNIC_XDP_STATIC OFF)
if(NOT missing AND GPUNIC_BPF_LIBRARY MATCHES "\\.a$")
  set(GPUNIC_XDP_STATIC ON)
  find_library(GPUNIC_ELF_LIBRARY elf)
  if(NOT ZLIB_FOUND)
    find_package(ZLIB QUIET)
  endif()
  if(NOT GPUNIC_ELF_LIBRARY OR NOT EXISTS "${GPUNIC_ELF_LIBRARY}")
    list(APPEND missing "GPUNIC_ELF_LIBRARY (libelf, for the static libbpf)")
  endif()
  if(NOT ZLIB_FOUND)
    list(APPEND missing "zlib (ZLIB_LIBRARY, for the static libbpf)")
  endif()
elseif(NOT missing AND GPUNIC_ELF_LIBRARY AND NOT EXISTS "${GPUNIC_ELF_LIBRARY}")
  list(APPEND missing "GPUNIC_ELF_LIBRARY (${GPUNIC_ELF_LIBRARY})")
endif()
set(GPUNIC_HAVE_XDP OFF)
if(missing)
  string(REPLACE ";" ", " missing "${missing}")
  message(STATUS "gpunic: xdp link not built (no ${missing}): install libxdp-dev libbpf-dev "
                 "clang, or see scripts/fetch-debs.sh; the packet link needs nothing")
else()
  set(GPUNIC_HAVE_XDP ON)
  set(GPUNIC_XDP_LIBRARIES ${GPUNIC_XDP_LIBRARY} ${GPUNIC_BPF_LIBRARY})
  set(libs ${GPUNIC_XDP_LIBRARIES})
  if(GPUNIC_XDP_STATIC)
    list(APPEND GPUNIC_XDP_LIBRARIES ${GPUNIC_ELF_LIBRARY} ${ZLIB_LIBRARIES})
    list(APPEND libs ${GPUNIC_ELF_LIBRARY} ${ZLIB_LIBRARIES})
  elseif(GPUNIC_ELF_LIBRARY)
    list(APPEND GPUNIC_XDP_LIBRARIES
         -Wl,--push-state,--no-as-needed ${GPUNIC_ELF_LIBRARY} -Wl,--pop-state)
    list(APPEND libs "${GPUNIC_ELF_LIBRARY} (for libbpf)")
  endif()
  if(GPUNIC_XDP_BPF_OBJECT)
    set(how "prebuilt ${GPUNIC_XDP_BPF_OBJECT} (GPUNIC_XDP_BPF_OBJECT; clang not used)")
  else()
    set(how "built with ${GPUNIC_BPF_CLANG}")
  endif()
  string(REPLACE ";" " " libs "${libs}")
  message(STATUS "gpunic: xdp link: ${libs}; XDP program ${how}")
  unset(how)
  unset(libs)
  if(GPUNIC_XDP_BPF_OBJECT)
    # said again at every build that embeds it (src/link/embed.cmake)
    include(${CMAKE_CURRENT_LIST_DIR}/gpunic_bpf_stale.cmake)
    gpunic_bpf_stale(${PROJECT_SOURCE_DIR}/src/link/xdp_roce.bpf.c ${GPUNIC_XDP_BPF_OBJECT})
  endif()
endif()
unset(missing)
