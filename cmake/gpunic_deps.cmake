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
# open fails saying why; everything else builds (the GPU machine has none of them).
find_path(GPUNIC_XDP_INCLUDE xdp/xsk.h)
find_path(GPUNIC_BPF_INCLUDE bpf/bpf_helpers.h)
find_library(GPUNIC_XDP_LIBRARY xdp)
find_library(GPUNIC_BPF_LIBRARY bpf)
find_program(GPUNIC_BPF_CLANG NAMES clang clang-16 clang-15 clang-14)
set(GPUNIC_HAVE_XDP OFF)
set(missing "")
foreach(v GPUNIC_XDP_INCLUDE GPUNIC_XDP_LIBRARY GPUNIC_BPF_INCLUDE GPUNIC_BPF_LIBRARY
          GPUNIC_BPF_CLANG)
  if(NOT ${v} OR NOT EXISTS "${${v}}")
    list(APPEND missing ${v})
  endif()
endforeach()
if(missing)
  string(REPLACE ";" ", " missing "${missing}")
  message(STATUS "gpunic: xdp link not built (no ${missing}): install libxdp-dev libbpf-dev "
                 "clang; the packet link needs nothing")
else()
  set(GPUNIC_HAVE_XDP ON)
  message(STATUS "gpunic: xdp link: libxdp ${GPUNIC_XDP_LIBRARY}, XDP program built with "
                 "${GPUNIC_BPF_CLANG}")
endif()
unset(missing)
