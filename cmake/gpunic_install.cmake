# Install and export libgpunic: the product API's headers, the library, a CMake package
# (find_package(gpunic) -> gpunic::gpunic) and pkg-config's gpunic.pc.
include(CMakePackageConfigHelpers)

# Every header of include/gpunic is the product's API (the benchmark programs' own live in
# src/internal/gpunic); tests/install compiles each installed header on its own.
file(GLOB gpunic_headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/include/gpunic
     ${PROJECT_SOURCE_DIR}/include/gpunic/*.h)
if(NOT GPUNIC_HAVE_PCAP)
  list(REMOVE_ITEM gpunic_headers pcap.h)  # its functions exist only with libpcap
endif()
list(TRANSFORM gpunic_headers PREPEND ${PROJECT_SOURCE_DIR}/include/gpunic/)
install(FILES ${gpunic_headers} ${PROJECT_BINARY_DIR}/include/gpunic/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpunic)

install(TARGETS gpunic EXPORT gpunicTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(gpunic_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/gpunic)
install(EXPORT gpunicTargets NAMESPACE gpunic:: DESTINATION ${gpunic_cmakedir})

# What a consumer's link needs besides libgpunic: nothing more for the shared library (its
# own DT_NEEDED entries), the libraries it was linked with for the static one.
if(GPUNIC_HAVE_LIBDEFLATE)
  set(gpunic_pc_libs_private "-ldeflate")
  set(GPUNIC_CONFIG_NEEDS_ZLIB OFF)
else()
  set(gpunic_pc_libs_private "-lz")
  set(GPUNIC_CONFIG_NEEDS_ZLIB ON)
endif()
if(GPUNIC_HAVE_PCAP)
  string(APPEND gpunic_pc_libs_private " -lpcap")
endif()
if(GPUNIC_HAVE_XDP)
  string(APPEND gpunic_pc_libs_private " -lxdp -lbpf")
  if(GPUNIC_XDP_STATIC)
    string(APPEND gpunic_pc_libs_private " -lelf -lz")  # a static libbpf's own dependencies
  endif()
endif()
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND gpunic_pc_libs_private " -l${lib}")
endforeach()
string(APPEND gpunic_pc_libs_private " -pthread")

# gpunic_dev.h includes rdma-core's infiniband/mlx5dv.h: headers only, nothing of rdma-core is
# linked, so gpunic.pc requires no rdma-core module (libmlx5.pc, where there is one, pulls
# libibverbs' and libnl's include paths and fails where it is missing); the header's directory
# is named in Cflags when the compiler does not look there by itself.
set(gpunic_pc_cflags "")
if(NOT GPUNIC_MLX5DV_INCLUDE IN_LIST CMAKE_C_IMPLICIT_INCLUDE_DIRECTORIES)
  set(gpunic_pc_cflags " -I${GPUNIC_MLX5DV_INCLUDE}")
endif()
if(GPUNIC_HAVE_PCAP)
  string(APPEND gpunic_pc_cflags " -DGPUNIC_HAVE_PCAP=1")
endif()
# Relocatable: the prefix is found from the .pc file's own place (pkg-config's pcfiledir),
# so `cmake --install --prefix DIR` gives a working file in DIR.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "gpunic: CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR must be relative")
endif()
file(RELATIVE_PATH gpunic_pc_up /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" gpunic_pc_up "${gpunic_pc_up}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/gpunic.pc.in ${PROJECT_BINARY_DIR}/gpunic.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpunic.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpunicConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpunicConfig.cmake INSTALL_DESTINATION ${gpunic_cmakedir})
# 0.x: a minor release may break what the one before it offered.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpunicConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpunicConfig.cmake
              ${PROJECT_BINARY_DIR}/gpunicConfigVersion.cmake
        DESTINATION ${gpunic_cmakedir})
