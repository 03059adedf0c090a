# Third-party dependencies: each one earns its place (DESIGN.md, "Decisions").
find_package(ZLIB REQUIRED)            # CRC-32 for the ICRC
find_package(Threads REQUIRED)

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
