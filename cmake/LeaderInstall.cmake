# Install rules: headers, every built component in one export set, leader-config.cmake with
# components (find_package(leader COMPONENTS sqlite redis)), and leader.pc.
include(CMakePackageConfigHelpers)

get_property(LEADER_BUILT_STORES GLOBAL PROPERTY LEADER_BUILT_STORES)
set(LEADER_INSTALL_TARGETS leader_core)
set(LEADER_PC_LIBS "-lleader-core")
# leader_http (internal, static) is linked PRIVATE by the HTTP stores: a static store's consumers
# link it too, so it is installed and exported, and listed after the stores in leader.pc.
set(LEADER_HAS_HTTP FALSE)
if(TARGET leader_http)
  set(LEADER_HAS_HTTP TRUE)
  list(APPEND LEADER_INSTALL_TARGETS leader_http)
  string(PREPEND LEADER_PC_LIBS "-lleader-http ")
endif()
foreach(store IN LISTS LEADER_BUILT_STORES)
  list(APPEND LEADER_INSTALL_TARGETS leader_${store})
  string(PREPEND LEADER_PC_LIBS "-lleader-${store} -Wl,-u,leader_store_${store}_anchor ")
endforeach()

install(DIRECTORY include/leader DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${LEADER_INSTALL_TARGETS} EXPORT leaderTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(LEADER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/leader)
install(EXPORT leaderTargets NAMESPACE leader:: DESTINATION ${LEADER_CMAKE_DIR})

set(LEADER_COMPONENTS ${LEADER_BUILT_STORES})
if(TARGET leader_asio)
  list(APPEND LEADER_COMPONENTS asio)
endif()
if(TARGET leader_scheduler)
  list(APPEND LEADER_COMPONENTS scheduler)
endif()
configure_package_config_file(cmake/leader-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/leader-config.cmake INSTALL_DESTINATION ${LEADER_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/leader-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/leader-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/leader-config-version.cmake
        DESTINATION ${LEADER_CMAKE_DIR})

# pkg-config: what each built store links (static libraries need them at the consumer's link).
set(_pc_sqlite sqlite3)
set(_pc_redis hiredis openssl)
set(_pc_postgres libpq)
set(_pc_mysql libmariadb)
set(_pc_etcd libcurl libcrypto)
set(_pc_dynamodb libcurl libcrypto)
set(_pc_mongodb libmongoc-1.0)
set(_pc_consul libcurl)
set(LEADER_PC_REQUIRES "")
set(LEADER_PC_PRIVATE_LIBS "")
foreach(store IN LISTS LEADER_BUILT_STORES)
  if(DEFINED _pc_${store})
    list(APPEND LEADER_PC_REQUIRES ${_pc_${store}})
  endif()
endforeach()
if("zookeeper" IN_LIST LEADER_BUILT_STORES)
  list(APPEND LEADER_PC_PRIVATE_LIBS -lzookeeper_mt)
endif()
list(REMOVE_DUPLICATES LEADER_PC_REQUIRES)
list(JOIN LEADER_PC_REQUIRES " " LEADER_PC_REQUIRES)
list(JOIN LEADER_PC_PRIVATE_LIBS " " LEADER_PC_PRIVATE_LIBS)
file(RELATIVE_PATH LEADER_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/leader.pc.in ${CMAKE_CURRENT_BINARY_DIR}/leader.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/leader.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
