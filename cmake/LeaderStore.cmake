# leader_add_store(<name> SOURCES ... [LIBS ...] [REQUIRED_FOUND <var>])
#
# Declares the store component leader::<name> (library leader_<name>). The store registers its
# URI schemes from a static initialiser in a translation unit that defines the C symbol
# `leader_store_<name>_anchor`; consumers link with `-Wl,-u,leader_store_<name>_anchor` (added to
# the target's INTERFACE link options and to leader.pc) so the registration is never dropped.
function(leader_add_store name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;PRIVATE_LIBS" ${ARGN})
  add_library(leader_${name} ${ARG_SOURCES})
  add_library(leader::${name} ALIAS leader_${name})
  set_target_properties(leader_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME leader-${name})
  target_link_libraries(leader_${name} PUBLIC leader::core ${ARG_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
  target_link_options(leader_${name} INTERFACE "LINKER:-u,leader_store_${name}_anchor")
  set_property(GLOBAL APPEND PROPERTY LEADER_BUILT_STORES ${name})
endfunction()

# leader_store_enabled(<name> <found>): resolves ON/OFF/AUTO against whether the store's
# dependencies were found. Sets LEADER_STORE_ENABLED in the caller; fails for ON without deps.
macro(leader_store_enabled name found)
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
