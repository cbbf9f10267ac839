# FindLeaderZooKeeper: the multi-threaded ZooKeeper C client (Debian libzookeeper-mt-dev, which
# ships neither a pkg-config nor a CMake file). Defines LeaderZooKeeper_FOUND, the cache variables
# LEADER_ZOOKEEPER_LIBRARY / LEADER_ZOOKEEPER_INCLUDE_DIR and the imported target
# leader_dep::zookeeper (with THREADED, which selects the library's multi-threaded API). Installed
# with leader's CMake package so consumers of the static leader::zookeeper find it the same way.
find_path(LEADER_ZOOKEEPER_INCLUDE_DIR NAMES zookeeper/zookeeper.h)
find_library(LEADER_ZOOKEEPER_LIBRARY NAMES zookeeper_mt)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LeaderZooKeeper
  REQUIRED_VARS LEADER_ZOOKEEPER_LIBRARY LEADER_ZOOKEEPER_INCLUDE_DIR)
if(LeaderZooKeeper_FOUND AND NOT TARGET leader_dep::zookeeper)
  add_library(leader_dep::zookeeper UNKNOWN IMPORTED)
  set_target_properties(leader_dep::zookeeper PROPERTIES
    IMPORTED_LOCATION "${LEADER_ZOOKEEPER_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LEADER_ZOOKEEPER_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS THREADED)
endif()
mark_as_advanced(LEADER_ZOOKEEPER_INCLUDE_DIR LEADER_ZOOKEEPER_LIBRARY)
