# `cmake --install BUILD --prefix PREFIX`: the executable in PREFIX/bin; the modules it opens
# with dlopen in PREFIX/lib/sparsetune (where FindModule looks); the shipped models in
# PREFIX/share/sparsetune/models (where DefaultModelsDirectory looks) and the JSON schemas of
# the outputs beside them; and what a user's build needs for an emitted kernel: the CMake
# package (find_package(sparsetune): the targets sparsetune::sparsetune, sparsetune::kernel and
# sparsetune::orderings, the function sparsetune_add_kernel), a pkg-config file and an include
# folder. The build tree
# exports the same package, so -Dsparsetune_DIR=BUILD works without installing.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sparsetune)
set(include_build_dir ${CMAKE_CURRENT_BINARY_DIR}/include)
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in ${include_build_dir}/sparsetune/version.h
               @ONLY)

# What an emitted kernel's library links: its include folder, OpenMP and C++17 (the kernels
# are generated for `c++ -std=c++17 -O3 -fopenmp`). -O3 and -march=native, the flags the
# kernels were timed with, are left to sparsetune_add_kernel, which gives them to the kernel's
# library alone.
add_library(sparsetune_kernel INTERFACE)
set_target_properties(sparsetune_kernel PROPERTIES EXPORT_NAME kernel)
target_include_directories(sparsetune_kernel INTERFACE $<BUILD_INTERFACE:${include_build_dir}>
                                                       $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(sparsetune_kernel INTERFACE OpenMP::OpenMP_CXX)
target_compile_features(sparsetune_kernel INTERFACE cxx_std_17)

install(TARGETS sparsetune EXPORT sparsetuneTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS sparsetune_kernel EXPORT sparsetuneTargets)
# The partition and community orderings (METIS, igraph) for the emitted kernels that need them.
install(TARGETS sparsetune_orderings EXPORT sparsetuneTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Private modules: lib/sparsetune whatever the platform's library folder is (FindModule's path).
install(TARGETS sparsetune_costmodel_torch sparsetune_baselines_libraries
        LIBRARY DESTINATION lib/sparsetune)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/sparsetune/models)
# The training corpus manifest and its held-out list, beside the models: calibrate measures a
# slice of it (generated entries are made on the spot; shared files must be there).
install(FILES ${CMAKE_SOURCE_DIR}/datasets/corpus/corpus.tsv ${CMAKE_SOURCE_DIR}/datasets/corpus/validation.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sparsetune/datasets/corpus)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/sparsetune/schemas
        FILES_MATCHING PATTERN "*.json")
install(FILES ${include_build_dir}/sparsetune/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparsetune)

install(EXPORT sparsetuneTargets NAMESPACE sparsetune:: DESTINATION ${package_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sparsetuneConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/sparsetuneConfig.cmake
                              INSTALL_DESTINATION ${package_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sparsetuneConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sparsetuneConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/sparsetuneConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/sparsetune_add_kernel.cmake
        DESTINATION ${package_dir})

# The build tree's package: the same files, with the targets where the build made them.
export(EXPORT sparsetuneTargets NAMESPACE sparsetune::
       FILE ${CMAKE_BINARY_DIR}/sparsetuneTargets.cmake)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sparsetuneConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/sparsetuneConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_BINARY_DIR}
                              INSTALL_PREFIX ${CMAKE_BINARY_DIR})
configure_file(${CMAKE_CURRENT_BINARY_DIR}/sparsetuneConfigVersion.cmake
               ${CMAKE_BINARY_DIR}/sparsetuneConfigVersion.cmake COPYONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/sparsetune_add_kernel.cmake
               ${CMAKE_BINARY_DIR}/sparsetune_add_kernel.cmake COPYONLY)

# pkg-config: the flags of an emitted kernel, and where the executable and models are; the
# prefix is found from the file's own folder, so the installed tree can move.
file(RELATIVE_PATH pkgconfig_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/sparsetune.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sparsetune.pc
               @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sparsetune.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
