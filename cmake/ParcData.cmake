# parc_copy_data(TARGET KIND FILE...): copies data files next to the tools
# (<build>/share/parc/KIND), where getDefaultDataDir(KIND) finds them, under
# the always-built target TARGET.
function(parc_copy_data target kind)
  set(dir ${CMAKE_BINARY_DIR}/share/parc/${kind})
  set(copied)
  foreach(file ${ARGN})
    get_filename_component(name ${file} NAME)
    add_custom_command(
      OUTPUT ${dir}/${name}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${file} ${dir}/${name}
      DEPENDS ${file}
      COMMENT "Copying ${kind} ${name}"
    )
    list(APPEND copied ${dir}/${name})
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${copied})
endfunction()
