# Debian packages by CPack (scripts/package.sh runs `cpack` in a build directory):
#   leader         the CLI (stripped), its man page, shell completions and the systemd units
#                  leader-serve.service and leader-cron.service, shipped disabled (no maintainer
#                  scripts: `systemctl enable` is the operator's choice); Depends from
#                  dpkg-shlibdeps (the client libraries of the built stores) (install component cli)
#   libleader0     the shared libraries, when the build has any (BUILD_SHARED_LIBS=ON, the C
#                  interface): the runtime package `leader` and programs depend on (component lib)
#   libleader-dev  headers, static libraries and .so links, CMake package and pkg-config files
#                  (component dev); Depends on the -dev packages of the built components'
#                  dependencies
# Each has /usr/share/doc/<package>/copyright (deploy/debian/copyright). Libraries go to
# ${CMAKE_INSTALL_LIBDIR}: scripts/package.sh configures the multiarch lib/<triplet> for the
# packages.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME leader)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "leader")
set(CPACK_PACKAGE_CONTACT "leader maintainers <leader-maintainers@example.invalid>")
# CPack's default summary: with any other, CPackDeb puts that one line above every package's own
# synopsis (the first line of its description below), giving each Description two synopses.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # executables and shared libraries only; static archives keep symbols
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(_leader_shared OFF)  # does any installed library ship a shared object?
foreach(c IN LISTS LEADER_COMPONENTS ITEMS core)
  get_target_property(_type leader_${c} TYPE)
  if(_type STREQUAL "SHARED_LIBRARY")
    set(_leader_shared ON)
  endif()
endforeach()
if(_leader_shared)
  list(APPEND CPACK_COMPONENTS_ALL lib)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/LeaderDebManPages.cmake)  # gzip man pages

set(CPACK_DEBIAN_CLI_PACKAGE_NAME leader)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
# Descriptions are one string each (a CMake list would join its items with ';'): a synopsis line,
# then the extended description, lines under 80 columns.
set(_leader_subcommands "run, status, list, observe, release")
if(TARGET leader::scheduler)
  string(APPEND _leader_subcommands ", cron")
endif()
get_property(_leader_serve GLOBAL PROPERTY LEADER_SERVE_BUILT)
if(_leader_serve)
  string(APPEND _leader_subcommands ", serve, probe")
endif()
list(JOIN LEADER_BUILT_STORES ", " _leader_stores)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "run a command once across replicas (distributed leader election)
leader elects one replica among many through a store the team already runs,
with fencing tokens: leader run is a distributed flock for any command.
Subcommands: ${_leader_subcommands}.
Stores built in: ${_leader_stores}.
The systemd units leader-serve.service and leader-cron.service are installed
disabled.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libleader0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# A shlibs file (programs built against it depend on this version) and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/deploy/debian/libleader0/triggers)
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "distributed leader election for C++20 (shared libraries)
The shared libraries of leader: the runtime of programs built against
libleader-dev with shared libraries, and of the C interface libleader.so.0.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libleader-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "distributed leader election for C++20 (development files)
Headers, static libraries, CMake package and pkg-config files of leader:
find_package(leader COMPONENTS redis) or pkg-config leader-redis.")

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
if(_leader_shared)
  list(PREPEND _leader_dev_depends "libleader0 (= ${PROJECT_VERSION})")
  list(JOIN _leader_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
endif()
if(BUILD_SHARED_LIBS)
  set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "libleader0 (= ${PROJECT_VERSION})")
endif()

install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/leader COMPONENT cli)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libleader-dev COMPONENT dev)
if(_leader_shared)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libleader0 COMPONENT lib)
endif()
if(TARGET leader)  # the units run /usr/bin/leader; nothing enables them (no maintainer scripts)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/leader-serve.service
                ${PROJECT_SOURCE_DIR}/deploy/systemd/leader-cron.service
          DESTINATION lib/systemd/system COMPONENT cli)
endif()

include(CPack)
