# Debian packages by CPack (scripts/package.sh runs `cpack` in a build directory):
#   leader         the CLI (stripped), its man page and shell completions (install component cli);
#                  Depends from dpkg-shlibdeps (the client libraries of the built stores)
#   libleader-dev  headers, libraries, CMake package and pkg-config files (component dev); Depends
#                  on the -dev packages of the built components' dependencies
# Built from the default static libraries; with BUILD_SHARED_LIBS=ON the shared libraries are in
# libleader-dev and `leader` depends on it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME leader)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "leader")
set(CPACK_PACKAGE_CONTACT "leader maintainers <leader-maintainers@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # executables and shared libraries only; static archives keep symbols
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME leader)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "Run a command once across replicas: leader run, status, list, release, cron\n"
    "leader run is a distributed flock for any command on SQLite, Redis, PostgreSQL, MySQL,\n"
    "etcd, ZooKeeper, DynamoDB, Consul, Kubernetes and MongoDB stores, with fencing tokens.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libleader-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Distributed leader election for C++20: headers, libraries, CMake and pkg-config files\n"
    "find_package(leader COMPONENTS redis) / pkg-config leader-redis.")

# The -dev packages a consumer of each built component needs: each component declares them once,
# in its own CMakeLists (leader_add_store / leader_add_library DEBIAN_DEV, cmake/LeaderStore.cmake);
# asio is header-only and declared here.
set(_leader_dev_depends "")
foreach(c IN LISTS LEADER_COMPONENTS)
  get_property(_deb GLOBAL PROPERTY LEADER_${c}_DEBIAN_DEV)
  list(APPEND _leader_dev_depends ${_deb})
endforeach()
if(asio IN_LIST LEADER_COMPONENTS)
  list(APPEND _leader_dev_depends libasio-dev)
endif()
list(REMOVE_DUPLICATES _leader_dev_depends)
list(SORT _leader_dev_depends)
list(JOIN _leader_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
if(BUILD_SHARED_LIBS)
  set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "libleader-dev (= ${PROJECT_VERSION})")
endif()

include(CPack)
