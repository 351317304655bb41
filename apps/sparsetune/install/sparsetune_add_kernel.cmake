# sparsetune_add_kernel(<target> MATRIX <file> (KERNEL <name> | EXPR <expression>)
#                       [DENSE <j=64,...>] [DTYPE f32|f64] [DATABASE <file>]
#                       [TUNE_ON_MISS] [TUNE_ARGS <argument>...] [NO_NATIVE])
#
# At configure time, asks the schedule database for the winner stored for MATRIX's sparsity
# pattern, the kernel and this machine (`sparsetune query MATRIX --kernel K --emit DIR`: no
# tuning, no compiler) and adds <target>, a static library built from the emitted kernel
# (<DIR>/sparsetune_<kernel>.h and .cpp; "expr" for EXPR) with the flags it was timed with
# (-O3 -march=native; NO_NATIVE leaves out -march=native) and sparsetune::kernel (and
# sparsetune::orderings when the schedule orders rows by partition or community). When nothing
# is stored, configuring stops with the `sparsetune tune` command to run first, or, with
# TUNE_ON_MISS, runs it (with TUNE_ARGS). DATABASE defaults to sparsetune's own default
# ($SPARSETUNE_DB, else sparsetune.db under the XDG data home). MATRIX and DATABASE become
# configure dependencies: a new winner emits the kernel again on the next build.
# SPARSETUNE_EXECUTABLE names the sparsetune to run (find_package(sparsetune) sets it).
function(sparsetune_add_kernel target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "TUNE_ON_MISS;NO_NATIVE"
                        "MATRIX;KERNEL;EXPR;DENSE;DTYPE;DATABASE" "TUNE_ARGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sparsetune_add_kernel: unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT SPARSETUNE_EXECUTABLE)
    message(FATAL_ERROR "sparsetune_add_kernel: SPARSETUNE_EXECUTABLE is not set "
                        "(find_package(sparsetune) sets it)")
  endif()
  if(NOT ARG_MATRIX OR NOT EXISTS "${ARG_MATRIX}")
    message(FATAL_ERROR "sparsetune_add_kernel(${target}): MATRIX '${ARG_MATRIX}' does not exist")
  endif()
  if(ARG_KERNEL AND NOT ARG_EXPR)
    set(kernel_args --kernel ${ARG_KERNEL})
    set(name sparsetune_${ARG_KERNEL})
  elseif(ARG_EXPR AND NOT ARG_KERNEL)
    set(kernel_args --expr "${ARG_EXPR}")
    set(name sparsetune_expr)
  else()
    message(FATAL_ERROR "sparsetune_add_kernel(${target}): give KERNEL or EXPR")
  endif()
  if(ARG_DENSE)
    list(APPEND kernel_args --dense ${ARG_DENSE})
  endif()
  if(ARG_DTYPE)
    list(APPEND kernel_args --dtype ${ARG_DTYPE})
  endif()
  set(db_args "")
  if(ARG_DATABASE)
    set(db_args --db "${ARG_DATABASE}")
  endif()

  set(emit_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_tuned")
  set(emitted "${emit_dir}/${name}.cpp")
  # A kernel left from an earlier configure must not stand in for a failed query.
  file(REMOVE_RECURSE "${emit_dir}")
  execute_process(
    COMMAND "${SPARSETUNE_EXECUTABLE}" query "${ARG_MATRIX}" ${kernel_args} ${db_args}
            --emit "${emit_dir}"
    RESULT_VARIABLE status
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  set(tuned_now OFF)
  if(status EQUAL 1)
    # A miss: nothing is stored for this pattern, kernel and machine. The query's message
    # holds the tune command to run.
    if(NOT ARG_TUNE_ON_MISS)
      string(STRIP "${err}" err)
      message(FATAL_ERROR "${err}\nthen configure again, or give sparsetune_add_kernel "
                          "TUNE_ON_MISS to tune at configure time.")
    endif()
    message(STATUS "sparsetune: no stored winner; tuning ${ARG_MATRIX} (this measures candidates)")
    execute_process(
      COMMAND "${SPARSETUNE_EXECUTABLE}" tune "${ARG_MATRIX}" ${kernel_args} ${db_args}
              ${ARG_TUNE_ARGS} --emit "${emit_dir}"
      RESULT_VARIABLE status
      OUTPUT_VARIABLE out
      ERROR_VARIABLE err)
    set(tuned_now ON)
  endif()
  if(NOT status EQUAL 0 OR NOT EXISTS "${emitted}")
    message(FATAL_ERROR "sparsetune failed (exit code ${status}):\n${err}")
  endif()
  if(tuned_now)
    message(STATUS "sparsetune: tuned now; kernel in ${emit_dir}")
  else()
    # query prints the stored winner's schedule on stdout.
    string(STRIP "${out}" out)
    message(STATUS "sparsetune: stored winner ${out}; kernel in ${emit_dir}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${ARG_MATRIX}")
  if(ARG_DATABASE AND EXISTS "${ARG_DATABASE}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${ARG_DATABASE}")
  endif()

  add_library(${target} STATIC "${emitted}")
  target_include_directories(${target} PUBLIC "${emit_dir}")
  target_link_libraries(${target} PUBLIC sparsetune::kernel)
  # A schedule that orders rows by METIS parts or Louvain communities computes them in
  # libsparsetune_orderings.
  file(STRINGS "${emitted}" external_ordering REGEX "^extern \"C\" int sparsetune_order_graph")
  if(external_ordering)
    target_link_libraries(${target} PUBLIC sparsetune::orderings)
  endif()
  target_compile_options(${target} PRIVATE -O3)
  if(NOT ARG_NO_NATIVE)
    include(CheckCXXCompilerFlag)
    check_cxx_compiler_flag(-march=native SPARSETUNE_HAVE_MARCH_NATIVE)
    if(SPARSETUNE_HAVE_MARCH_NATIVE)
      target_compile_options(${target} PRIVATE -march=native)
    endif()
  endif()
endfunction()
