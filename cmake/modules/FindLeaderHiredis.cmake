# FindLeaderHiredis: hiredis (Debian libhiredis-dev), located through its pkg-config file when
# there is one. Defines LeaderHiredis_FOUND, LeaderHiredis_VERSION and the imported target
# leader_dep::hiredis (no CMake config ships with Debian's hiredis 0.14). Installed with leader's
# CMake package so consumers of the static leader::redis find it the same way.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_LEADER_HIREDIS QUIET hiredis)
endif()
find_path(LEADER_HIREDIS_INCLUDE_DIR NAMES hiredis/hiredis.h HINTS ${PC_LEADER_HIREDIS_INCLUDEDIR})
find_library(LEADER_HIREDIS_LIBRARY NAMES hiredis HINTS ${PC_LEADER_HIREDIS_LIBDIR})
set(LeaderHiredis_VERSION ${PC_LEADER_HIREDIS_VERSION})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LeaderHiredis
  REQUIRED_VARS LEADER_HIREDIS_LIBRARY LEADER_HIREDIS_INCLUDE_DIR VERSION_VAR LeaderHiredis_VERSION)
if(LeaderHiredis_FOUND AND NOT TARGET leader_dep::hiredis)
  add_library(leader_dep::hiredis UNKNOWN IMPORTED)
  set_target_properties(leader_dep::hiredis PROPERTIES IMPORTED_LOCATION "${LEADER_HIREDIS_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LEADER_HIREDIS_INCLUDE_DIR}")
endif()
mark_as_advanced(LEADER_HIREDIS_INCLUDE_DIR LEADER_HIREDIS_LIBRARY)
