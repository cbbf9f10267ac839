# FindLeaderMariaDB: MariaDB Connector/C (Debian libmariadb-dev), located through its pkg-config
# file libmariadb when there is one. Defines LeaderMariaDB_FOUND, LeaderMariaDB_VERSION and the
# imported target leader_dep::mariadb (whose include directory holds mysql.h). Installed with
# leader's CMake package so consumers of the static leader::mysql find it the same way.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_LEADER_MARIADB QUIET libmariadb)
endif()
find_path(LEADER_MARIADB_INCLUDE_DIR NAMES mysql.h HINTS ${PC_LEADER_MARIADB_INCLUDEDIR}
          PATH_SUFFIXES mariadb)
find_library(LEADER_MARIADB_LIBRARY NAMES mariadb HINTS ${PC_LEADER_MARIADB_LIBDIR})
set(LeaderMariaDB_VERSION ${PC_LEADER_MARIADB_VERSION})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LeaderMariaDB
  REQUIRED_VARS LEADER_MARIADB_LIBRARY LEADER_MARIADB_INCLUDE_DIR VERSION_VAR LeaderMariaDB_VERSION)
if(LeaderMariaDB_FOUND AND NOT TARGET leader_dep::mariadb)
  add_library(leader_dep::mariadb UNKNOWN IMPORTED)
  set_target_properties(leader_dep::mariadb PROPERTIES IMPORTED_LOCATION "${LEADER_MARIADB_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LEADER_MARIADB_INCLUDE_DIR}")
endif()
mark_as_advanced(LEADER_MARIADB_INCLUDE_DIR LEADER_MARIADB_LIBRARY)
