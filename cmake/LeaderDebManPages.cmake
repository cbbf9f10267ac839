# CPACK_PRE_BUILD_SCRIPTS of the Debian packages (cmake/LeaderPackage.cmake): man pages in the
# staging tree are compressed, as Debian policy asks (`cmake --install` keeps them plain).
file(GLOB_RECURSE _leader_staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_DIRECTORY}/*")
foreach(file IN LISTS _leader_staged)
  if(file MATCHES "/share/man/man[1-9]/[^/]+\\.[1-9]$")
    message(STATUS "gzip ${file}")
    execute_process(COMMAND gzip -9nf "${file}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gzip ${file} failed (${rc})")
    endif()
  endif()
endforeach()
