# CakeInstall.cmake - `cmake --install` of Cake: cakec, the compiler library
# (libcake.so, API in cake.h), the runtime (libcakert.so, API in
# cake_runtime.h), the headers under include/cake, a CMake package
# (find_package(Cake): Cake::compiler, Cake::runtime) and pkg-config files
# (cake.pc, cakert.pc). The shared libraries export their cake_* API only.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# libcake.so: the compiler's static layers in one shared library (so they are PIC).
set_target_properties(cakelower cake PROPERTIES POSITION_INDEPENDENT_CODE ON)
file(WRITE ${CMAKE_BINARY_DIR}/cake_so.c "/* libcake.so: everything comes from the static layers */\n")
add_library(cake_compiler SHARED ${CMAKE_BINARY_DIR}/cake_so.c)
target_link_libraries(cake_compiler PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,cake>")
target_link_options(cake_compiler PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/libcake.map)
if(NOT CAKE_SANITIZE)
  # (sanitized libraries leave the sanitizer runtime to the executable)
  target_link_options(cake_compiler PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(cake_compiler INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/compiler> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/cake>)
set_target_properties(cake_compiler PROPERTIES OUTPUT_NAME cake EXPORT_NAME compiler
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  BUILD_RPATH ${CAKE_LLVM_ROOT}/lib INSTALL_RPATH ${CAKE_LLVM_ROOT}/lib
  LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/libcake.map)
target_link_options(cakert PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/libcakert.map)
set_target_properties(cakert PROPERTIES EXPORT_NAME runtime VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR} LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/libcakert.map)
set_target_properties(cakec PROPERTIES INSTALL_RPATH ${CAKE_LLVM_ROOT}/lib)

install(TARGETS cakec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS cake_compiler cakert EXPORT CakeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cake)
install(FILES ${CMAKE_SOURCE_DIR}/compiler/cake.h ${CMAKE_SOURCE_DIR}/runtime/cake_runtime.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cake)
install(EXPORT CakeTargets NAMESPACE Cake:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Cake)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/CakeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/CakeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Cake
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/CakeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/CakeConfig.cmake ${CMAKE_BINARY_DIR}/CakeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Cake)
# the .pc files locate the prefix from their own folder, so that
# `cmake --install --prefix DIR` gives working files in any DIR
set(CAKE_PC_TO_PREFIX "..")
string(REPLACE "/" ";" _libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(_p ${_libdir_parts})
  string(APPEND CAKE_PC_TO_PREFIX "/..")
endforeach()
foreach(pc cake cakert)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
