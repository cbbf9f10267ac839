# Store components: one declaration per store, in the store's own src/stores/<name>/CMakeLists.txt.
#
#   leader_add_store(<name>
#     SCHEMES <scheme>...               the URI schemes leader::open() gives this store (e.g.
#                                       postgresql postgres); its register.cpp registers under them
#     SOURCES <file>...                 the store's sources, register.cpp included
#     [DEPENDS "<find_package args>"...] what a CONSUMER of the installed static library must find
#                                       too: one find_package() per entry, e.g. "CURL"
#                                       "OpenSSL COMPONENTS Crypto" "LeaderHiredis" (cmake/modules/)
#     [BUILD_DEPENDS "<args>"...]       found for the build only (header-only: "nlohmann_json 3");
#                                       link them as $<BUILD_INTERFACE:target>
#     [INTERNAL <name>...]              internal libraries (leader_add_internal) the store links
#     [LIBS <target>...]                PUBLIC link libraries
#     [PRIVATE_LIBS <target>...]        PRIVATE link libraries (the DEPENDS' imported targets)
#     [PKGCONFIG <module>...]           pkg-config modules of the DEPENDS (Requires of leader-<name>.pc)
#     [PKGCONFIG_LIBS <flag>...]        link flags of DEPENDS without a .pc file (-lzookeeper_mt))
#     [DEBIAN_DEV <package>...]         the Debian -dev packages a consumer needs for the DEPENDS
#                                       (Depends of the libleader-dev package: LeaderPackage.cmake)
#
# What it does, so that nothing about a store is written twice:
# - schemes: records SCHEMES, whether the store is built or not (LEADER_WITH_<NAME>=OFF and
#   skipped stores included), for the table of leader::open() (leader_write_store_schemes below):
#   its error for a scheme of a store that is not linked names the component to link, and
#   LEADER_REGISTER_STORE(<name>, factory) in register.cpp registers under exactly these schemes.
# - build: runs find_package(<entry> QUIET) for every DEPENDS / BUILD_DEPENDS entry; when one is
#   missing the store is skipped (LEADER_WITH_<NAME>=AUTO) or the configuration fails (=ON). When
#   it is skipped no target exists: follow the call with `if(NOT TARGET leader_<name>) return()`.
#   Otherwise it creates leader_<name> (alias leader::<name>, file libleader-<name>), linked PUBLIC
#   to leader::core, with the INTERFACE link option -u leader_store_<name>_anchor so the static
#   registration (LEADER_REGISTER_STORE in <leader/detail/store_registration.hpp>) is never dropped.
# - install (cmake/LeaderInstall.cmake): the store gets its own export set
#   (lib/cmake/leader/leader-<name>-targets.cmake); leader-config.cmake is generated from the
#   DEPENDS of every built component, so find_package(leader COMPONENTS <name>) runs
#   find_dependency() only for <name>'s (and its INTERNAL libraries') entries; and
#   lib/pkgconfig/leader-<name>.pc is generated from PKGCONFIG / PKGCONFIG_LIBS; the .deb of the
#   headers (cmake/LeaderPackage.cmake) depends on the DEBIAN_DEV packages of every built one.
# Rule for DEPENDS: link only imported targets (never a path from find_library): exported targets
# must carry no absolute library path. Write a Find module in cmake/modules/ (FindLeader<Dep>.cmake,
# target leader_dep::<dep>) for a library with neither a CMake config nor a CMake find module.
#
# Example (src/stores/etcd/CMakeLists.txt):
#   leader_add_store(etcd
#     SCHEMES etcd etcds
#     SOURCES codec.cpp config.cpp etcd_store.cpp register.cpp
#     DEPENDS "CURL" "OpenSSL COMPONENTS Crypto"
#     BUILD_DEPENDS "nlohmann_json 3"
#     INTERNAL http
#     PRIVATE_LIBS CURL::libcurl OpenSSL::Crypto $<BUILD_INTERFACE:nlohmann_json::nlohmann_json>
#     PKGCONFIG libcurl libcrypto
#     DEBIAN_DEV libssl-dev libcurl4-openssl-dev)
#   if(NOT TARGET leader_etcd)
#     return()
#   endif()
#
#   leader_add_library(<name> SOURCES ... [same keywords])
# declares a component that is not a store (leader::<name>, e.g. scheduler): packaged the same way.
#
#   leader_add_internal(<name> SOURCES ... [same keywords])
# declares an internal library leader_<name> (e.g. src/http -> leader_http), not a component of
# its own: it is built when its DEPENDS are found, installed and exported (its own export set,
# pulled in by the components that list it in INTERNAL) so static consumers link it, and gets a
# leader-<name>.pc that the components' .pc files require. It may list other internal libraries,
# declared before it, in INTERNAL (src/clients/etcd: INTERNAL http); a component that lists it
# then pulls those in too.

# Runs find_package for each entry of `deps`; sets <out> to the entries that were not found.
function(_leader_find_deps out)
  set(missing "")
  foreach(dep IN LISTS ARGN)
    separate_arguments(args UNIX_COMMAND "${dep}")
    list(GET args 0 pkg)
    find_package(${args} QUIET)
    if(NOT ${pkg}_FOUND)
      list(APPEND missing "${dep}")
    endif()
  endforeach()
  set(${out} "${missing}" PARENT_SCOPE)
endfunction()

# Records the URI schemes of store `name` (GLOBAL property LEADER_STORE_SCHEMES, "scheme=name"
# entries); a store without schemes, or a scheme two stores claim, stops the configuration.
function(_leader_declare_schemes name)
  if(NOT ARGN)
    message(FATAL_ERROR "leader_add_store(${name}): declare its URI schemes with SCHEMES")
  endif()
  foreach(scheme IN LISTS ARGN)
    if(NOT scheme MATCHES "^[a-z][a-z0-9+.-]*$")
      message(FATAL_ERROR "leader_add_store(${name}): '${scheme}' is not a URI scheme")
    endif()
    get_property(owner GLOBAL PROPERTY LEADER_SCHEME_OWNER_${scheme})
    if(owner AND NOT owner STREQUAL name)
      message(FATAL_ERROR "leader_add_store(${name}): scheme '${scheme}' is already the ${owner} "
                          "store's")
    endif()
    if(NOT owner)
      set_property(GLOBAL PROPERTY LEADER_SCHEME_OWNER_${scheme} ${name})
      set_property(GLOBAL APPEND PROPERTY LEADER_STORE_SCHEMES "${scheme}=${name}")
    endif()
  endforeach()
endfunction()

# Where leader_write_store_schemes writes leader_store_schemes.inc (src/core adds it to
# leader_core's include path).
set(LEADER_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)

# leader_write_store_schemes(): writes the table of every declared store scheme and its
# component, which src/core/config/open.cpp compiles in. Called once, after every store's CMakeLists.txt;
# the file changes (and open.cpp recompiles) only when a declaration does.
function(leader_write_store_schemes)
  get_property(entries GLOBAL PROPERTY LEADER_STORE_SCHEMES)
  set(rows "// Generated by leader_write_store_schemes (cmake/LeaderStore.cmake): do not edit.\n")
  foreach(entry IN LISTS entries)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 scheme)
    list(GET pair 1 component)
    string(APPEND rows "{\"${scheme}\", \"${component}\"},\n")
  endforeach()
  file(CONFIGURE OUTPUT ${LEADER_GENERATED_DIR}/leader_store_schemes.inc CONTENT "${rows}"
       @ONLY NEWLINE_STYLE UNIX)
endfunction()

# The body shared by leader_add_store and leader_add_internal.
function(_leader_add_component kind name)
  cmake_parse_arguments(ARG "" ""
    "SCHEMES;SOURCES;DEPENDS;BUILD_DEPENDS;INTERNAL;LIBS;PRIVATE_LIBS;PKGCONFIG;PKGCONFIG_LIBS;DEBIAN_DEV"
    ${ARGN})
  string(TOUPPER "${name}" up)
  if(kind STREQUAL "store")
    _leader_declare_schemes(${name} ${ARG_SCHEMES})
    if(LEADER_WITH_${up} STREQUAL "OFF")
      message(STATUS "leader: ${name} store off (LEADER_WITH_${up}=OFF)")
      set(LEADER_STORE_ENABLED FALSE PARENT_SCOPE)
      return()
    endif()
  elseif(ARG_SCHEMES)
    message(FATAL_ERROR "leader: ${name}: SCHEMES belongs to leader_add_store only")
  endif()
  _leader_find_deps(missing ${ARG_DEPENDS} ${ARG_BUILD_DEPENDS})
  foreach(lib IN LISTS ARG_INTERNAL)
    if(NOT TARGET leader_${lib})
      list(APPEND missing "internal library leader_${lib}")
    endif()
  endforeach()
  if(missing)
    if(kind STREQUAL "store" AND LEADER_WITH_${up} STREQUAL "ON")
      message(FATAL_ERROR "LEADER_WITH_${up}=ON but the ${name} store's dependencies were not "
                          "found: ${missing}")
    endif()
    message(STATUS "leader: ${name} ${kind} skipped (not found: ${missing})")
    set(LEADER_STORE_ENABLED FALSE PARENT_SCOPE)
    return()
  endif()
  add_library(leader_${name} ${ARG_SOURCES})
  add_library(leader::${name} ALIAS leader_${name})
  set_target_properties(leader_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME leader-${name}
                                                 ${LEADER_LIBRARY_VERSION_PROPERTIES})
  list(TRANSFORM ARG_INTERNAL PREPEND leader_ OUTPUT_VARIABLE internal_targets)
  target_link_libraries(leader_${name} PUBLIC leader::core ${ARG_LIBS}
                        PRIVATE ${internal_targets} ${ARG_PRIVATE_LIBS})
  if(kind STREQUAL "store")
    target_link_options(leader_${name} INTERFACE "LINKER:-u,leader_store_${name}_anchor")
    set_property(GLOBAL APPEND PROPERTY LEADER_BUILT_STORES ${name})
  elseif(kind STREQUAL "component")
    set_property(GLOBAL APPEND PROPERTY LEADER_BUILT_LIBRARIES ${name})
  else()
    set_property(GLOBAL APPEND PROPERTY LEADER_BUILT_INTERNALS ${name})
  endif()
  # What cmake/LeaderInstall.cmake generates the package files from (GLOBAL and QUIET dropped:
  # they are build-tree choices, not the consumer's).
  set(consumer_deps "")
  foreach(dep IN LISTS ARG_DEPENDS)
    string(REGEX REPLACE " (GLOBAL|QUIET)( |$)" "\\2" dep "${dep}")
    list(APPEND consumer_deps "${dep}")
  endforeach()
  set_property(GLOBAL PROPERTY LEADER_${name}_DEPENDS "${consumer_deps}")
  # Each internal library's own internals first (they are loaded and linked before it).
  set(internal_closure "")
  foreach(lib IN LISTS ARG_INTERNAL)
    get_property(inner GLOBAL PROPERTY LEADER_${lib}_INTERNAL)
    list(APPEND internal_closure ${inner} ${lib})
  endforeach()
  list(REMOVE_DUPLICATES internal_closure)
  set_property(GLOBAL PROPERTY LEADER_${name}_INTERNAL "${internal_closure}")
  set_property(GLOBAL PROPERTY LEADER_${name}_PKGCONFIG "${ARG_PKGCONFIG}")
  set_property(GLOBAL PROPERTY LEADER_${name}_PKGCONFIG_LIBS "${ARG_PKGCONFIG_LIBS}")
  set_property(GLOBAL PROPERTY LEADER_${name}_DEBIAN_DEV "${ARG_DEBIAN_DEV}")
  set(LEADER_STORE_ENABLED TRUE PARENT_SCOPE)
endfunction()

# leader_add_store(<name> ...): see the top of this file.
function(leader_add_store name)
  _leader_add_component(store ${name} ${ARGN})
  set(LEADER_STORE_ENABLED ${LEADER_STORE_ENABLED} PARENT_SCOPE)
endfunction()

# leader_add_library(<name> ...): a component that is not a store (e.g. src/scheduler ->
# leader::scheduler): same keywords and package generation as leader_add_store, without the
# registration anchor.
function(leader_add_library name)
  _leader_add_component(component ${name} ${ARGN})
endfunction()

# leader_add_internal(<name> ...): an internal library shared by stores; see the top of this file.
function(leader_add_internal name)
  _leader_add_component(internal ${name} ${ARGN})
endfunction()

# Deprecated (stores now pass DEPENDS to leader_add_store, which does this): resolves ON/OFF/AUTO
# against whether the store's dependencies were found and sets LEADER_STORE_ENABLED.
macro(leader_store_enabled name found)
  message(DEPRECATION "leader_store_enabled(${name}): declare DEPENDS in leader_add_store instead")
  string(TOUPPER "${name}" _up)
  if(${found})
    set(LEADER_STORE_ENABLED TRUE)
  elseif(LEADER_WITH_${_up} STREQUAL "ON")
    message(FATAL_ERROR "LEADER_WITH_${_up}=ON but the ${name} store's dependencies were not found")
  else()
    message(STATUS "leader: ${name} store skipped (dependencies not found)")
    set(LEADER_STORE_ENABLED FALSE)
  endif()
endmacro()
