# `cpack -G DEB` in a build folder: one Debian package of what `cmake --install` installs (the
# library, its headers, the CMake package and gpunic.pc, the gpunic CLI and its man pages),
# under /usr. tests/install/deb_test.sh builds it, installs it and uses it.
set(CPACK_PACKAGE_NAME gpunic)
set(CPACK_PACKAGE_VENDOR gpunic)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Software RoCEv2 NIC with ConnectX (mlx5) queues that CUDA kernels and CPU threads drive")
set(CPACK_PACKAGE_DESCRIPTION
    "gpunic lets CUDA kernels drive RDMA over Converged Ethernet (RoCEv2) by themselves, \
without RDMA hardware: its NIC is software that speaks the RoCEv2 wire protocol and keeps \
its queues in the ConnectX (mlx5) format. The package holds libgpunic, its headers, its \
CMake package and pkg-config file, and the gpunic command line with its man pages.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "gpunic maintainers <gpunic@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/gpunic")
# The libraries the CLI and libgpunic load (libdeflate, libpcap, libxdp...) from
# dpkg-shlibdeps; rdma-core's headers because gpunic_dev.h includes infiniband/mlx5dv.h.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libibverbs-dev")
include(CPack)
