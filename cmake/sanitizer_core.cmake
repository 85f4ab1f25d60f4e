# Sanitizer builds (scripts/sanitize.sh; included by CMakeLists.txt when XG2_SANITIZE is set).
#
# The engine's core (XG2_CORE_SOURCES) is compiled once, into the object library
# xg2_instrumented_core, and every program of the build links those objects: the Python module
# (_native), the native unit tests (xg2_native_tests) and, with XG2_FUZZ=ON, the libFuzzer
# targets (fuzz/native). Compiling an instrumented core costs several minutes on a small
# machine; before, the module, the unit tests and the fuzz targets each compiled their own.
#
#   XG2_SANITIZE=ON or address   AddressSanitizer + UndefinedBehaviorSanitizer (gcc or clang)
#   XG2_SANITIZE=thread          ThreadSanitizer
#   XG2_FUZZ=ON                  with address and clang: the core also carries libFuzzer's
#                                coverage instrumentation (-fsanitize=fuzzer-no-link); in the
#                                module and the unit tests the sanitizer runtime's default
#                                coverage hooks take it (they do nothing)
#
# The core is built with the engine's invariant checks on (XG2_FORCE_DCHECKS, support/dcheck.h),
# as the unit tests need and as every sanitizer build should run anyway. Optimisation comes
# from the configuration (scripts/sanitize.sh passes -O1 -g1).

string(TOLOWER "${XG2_SANITIZE}" XG2_SANITIZE)
if(XG2_SANITIZE STREQUAL "thread")
  set(XG2_SANITIZER_FLAGS -fsanitize=thread)
elseif(XG2_SANITIZE MATCHES "^(address|on|1|true|yes)$")
  # A UBSan report stops the program (as halt_on_error does at run time): a fuzzer saves the
  # input, a test fails.
  set(XG2_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  set(XG2_SANITIZE address)
else()
  message(FATAL_ERROR "XG2_SANITIZE=${XG2_SANITIZE}: expected OFF, ON, address or thread")
endif()
if(XG2_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "XG2_FUZZ=ON needs clang (libFuzzer), got ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(NOT XG2_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "XG2_FUZZ=ON needs XG2_SANITIZE=address, got ${XG2_SANITIZE}")
  endif()
endif()

add_library(xg2_instrumented_core OBJECT ${XG2_CORE_SOURCES})
# The module's objects: position independent, hidden like pybind11_add_module's own sources.
set_target_properties(xg2_instrumented_core PROPERTIES POSITION_INDEPENDENT_CODE ON
                      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(xg2_instrumented_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/native)
target_compile_definitions(xg2_instrumented_core PUBLIC XG2_FORCE_DCHECKS)
target_compile_options(xg2_instrumented_core PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_compile_options(xg2_instrumented_core PUBLIC ${XG2_SANITIZER_FLAGS} -fno-omit-frame-pointer)
target_link_options(xg2_instrumented_core INTERFACE ${XG2_SANITIZER_FLAGS})
target_link_libraries(xg2_instrumented_core PUBLIC Threads::Threads)
if(XG2_FUZZ)
  target_compile_options(xg2_instrumented_core PRIVATE -fsanitize=fuzzer-no-link)
endif()

# Coverage-guided fuzz targets (fuzz/native/*.cc): the core without Python or pybind11. Build
# with `ninja xg2_fuzz_targets`; not part of the default build. scripts/sanitize.sh fuzz builds
# and runs them.
if(XG2_FUZZ)
  file(GLOB XG2_FUZZ_TARGET_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/native/fuzz_*.cc)
  add_custom_target(xg2_fuzz_targets)
  foreach(source ${XG2_FUZZ_TARGET_SOURCES})
    get_filename_component(name ${source} NAME_WE)
    add_executable(${name} EXCLUDE_FROM_ALL ${source})
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/native)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE xg2_instrumented_core)
    add_dependencies(xg2_fuzz_targets ${name})
  endforeach()
endif()
