# hb_cc_library / hb_cc_binary / hb_cc_test: small named targets with hb:: aliases, shaped
# like Abseil's absl_cc_library. Every target gets the project's warning flags.
#
#   hb_cc_library(NAME dataset SRCS dataset.cc HDRS dataset.h DEPS hb::json absl::status)
#     -> target hb_dataset, alias hb::dataset (INTERFACE when there are no SRCS)
#   hb_cc_test(NAME dataset_test SRCS dataset_test.cc DEPS hb::dataset)
#     -> its tests in ctest; one executable per test folder and label set (see hb_cc_test)

# The TSan build (HB_SANITIZE=thread) links tests/testing/tsan/absl_tsan_shim.cc into every
# binary and test: it makes Debian's uninstrumented absl::Mutex visible to TSan (see the file).
# It also force-includes tests/testing/tsan/protobuf_map_abi.h into every translation unit.
if(HB_SANITIZE MATCHES "thread")
  # Every TU reads protobuf's map_field.h with the library's layout (see the header).
  add_compile_options(-include ${PROJECT_SOURCE_DIR}/tests/testing/tsan/protobuf_map_abi.h)
  add_library(hb_tsan_shim OBJECT ${PROJECT_SOURCE_DIR}/tests/testing/tsan/absl_tsan_shim.cc)
  target_link_libraries(hb_tsan_shim PUBLIC absl::synchronization absl::time ${CMAKE_DL_LIBS})
endif()

# Links the TSan shim into executable `target` in the TSan build; nothing otherwise.
function(hb_link_tsan_shim target)
  if(TARGET hb_tsan_shim)
    target_link_libraries(${target} PRIVATE hb_tsan_shim)
  endif()
endfunction()

# Links the project's allocator (tcmalloc with its settings, see HB_TCMALLOC) into executable
# `target` when it was found; glibc's malloc otherwise.
function(hb_link_allocator target)
  if(TARGET hb_tcmalloc_tuning)
    target_link_libraries(${target} PRIVATE hb_tcmalloc_tuning PkgConfig::TCMALLOC)
  endif()
endfunction()

# hb_cc_precompiled_header(NAME hb_test_pch HEADERS <string> ... DEPS hb::testing)
#   -> object library NAME that only builds a precompiled header of HEADERS with DEPS' usage
#      requirements; targets use it through target_precompile_headers(... REUSE_FROM NAME).
#      gcc uses the header only in a file that defines every macro it was built with (and none
#      it reads that it was built without): -Winvalid-pch, an error here, says when not.
function(hb_cc_precompiled_header)
  cmake_parse_arguments(HB "" "NAME" "HEADERS;DEPS" ${ARGN})
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${HB_NAME}.cc
       CONTENT "// The object that builds ${HB_NAME}, a precompiled header.\n")
  add_library(${HB_NAME} OBJECT ${CMAKE_CURRENT_BINARY_DIR}/${HB_NAME}.cc)
  target_link_libraries(${HB_NAME} PRIVATE ${HB_DEPS})
  target_compile_options(${HB_NAME} PRIVATE ${HB_WARNING_FLAGS})
  target_precompile_headers(${HB_NAME} PRIVATE ${HB_HEADERS})
endfunction()

# The libraries' and binaries' precompiled header (HB_PCH, the optimized gcc tree): the standard
# library and Abseil, which every object parses. Built without any target's definitions, so it
# holds only headers no definition of ours or of a dependency changes (no RapidJSON, spdlog,
# fmt: their macros differ between targets). Libraries under tests/ (compiled at -Og) use none;
# the tests use tests/testing's hb_test_pch.
if(HB_PCH_ENABLED)
  hb_cc_precompiled_header(NAME hb_library_pch HEADERS
    <algorithm> <atomic> <cmath> <cstdint> <cstdio> <functional> <map> <memory> <optional>
    <string> <utility> <vector>
    <absl/container/flat_hash_map.h> <absl/container/flat_hash_set.h> <absl/status/status.h>
    <absl/status/statusor.h> <absl/strings/match.h> <absl/strings/str_cat.h>
    <absl/strings/str_format.h> <absl/strings/str_split.h> <absl/strings/string_view.h>
    <absl/synchronization/mutex.h> <absl/time/time.h>)
endif()

function(hb_reuse_library_pch target)
  if(TARGET hb_library_pch AND NOT CMAKE_CURRENT_SOURCE_DIR MATCHES "^${PROJECT_SOURCE_DIR}/tests(/|$)")
    target_precompile_headers(${target} REUSE_FROM hb_library_pch)
  endif()
endfunction()

# hb_unity_build(target): in the optimized gcc tree (HB_PCH), the target's files compile as one
# unity source. Files of one target share most of their templates (gRPC, protobuf, RapidJSON,
# our own), which one source instantiates and optimizes once: orchestrator/run's four files took
# 32 CPU-s one by one and 16 s as one source. The sanitizer and clang trees compile each file
# alone, so a file that forgets an #include still fails there; names in a file's anonymous
# namespace must not collide with another file's of the same target.
function(hb_unity_build target)
  if(HB_PCH_ENABLED)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
                                               UNITY_BUILD_BATCH_SIZE 0)
  endif()
endfunction()

function(hb_cc_library)
  cmake_parse_arguments(HB "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  set(target hb_${HB_NAME})
  if(HB_SRCS)
    add_library(${target} STATIC ${HB_SRCS} ${HB_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${HB_DEPS})
    target_compile_options(${target} PRIVATE ${HB_WARNING_FLAGS})
    hb_reuse_library_pch(${target})
    hb_unity_build(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${HB_DEPS})
  endif()
  add_library(hb::${HB_NAME} ALIAS ${target})
endfunction()

function(hb_cc_binary)
  cmake_parse_arguments(HB "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${HB_NAME} ${HB_SRCS})
  target_link_libraries(${HB_NAME} PRIVATE ${HB_DEPS})
  target_compile_options(${HB_NAME} PRIVATE ${HB_WARNING_FLAGS})
  hb_reuse_library_pch(${HB_NAME})
  hb_unity_build(${HB_NAME})
  hb_link_tsan_shim(${HB_NAME})
  hb_link_allocator(${HB_NAME})
endfunction()

# hb_cc_test(NAME dataset_test SRCS dataset_test.cc DEPS hb::dataset [LABELS integration]
#             [NEEDS hb-llm-sim ...] [STANDALONE])
#   -> the file's tests, registered with ctest one test per gtest test (gtest_discover_tests:
#      ctest names are the gtest names, each run in a process of its own). LABELS (default unit)
#      label them; NEEDS names the project binaries they start (built first).
#   With HB_TEST_GROUPS (on by default), the hb_cc_test calls of one folder that share LABELS
#   build one executable, <folder path>_test or <folder path>_<labels>_test (tests/http ->
#   tests/http/http_test; tests/orchestrator/run's integration tests ->
#   tests/orchestrator/run/orchestrator_run_integration_test), with the union of their DEPS; in
#   the optimized gcc tree (HB_PCH) its files compile as one unity source, which halves the
#   instantiations they share. STANDALONE keeps a file in an executable named NAME of its own
#   (a test that replaces operator new). -DHB_TEST_GROUPS=OFF: one executable per NAME.
option(HB_TEST_GROUPS "One test executable per test folder and label set" ON)

# hb_add_test_executable(NAME SRCS DEPS LABELS NEEDS UNITY): the executable and its ctest tests.
function(hb_add_test_executable name srcs deps labels needs unity)
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${deps} hb::testing GTest::gmock_main)
  target_compile_options(${name} PRIVATE ${HB_WARNING_FLAGS})
  if(HB_PCH_ENABLED)
    target_precompile_headers(${name} REUSE_FROM hb_test_pch)
  endif()
  if(unity)
    hb_unity_build(${name})
  endif()
  if(needs)
    add_dependencies(${name} ${needs})
  endif()
  hb_link_tsan_shim(${name})
  # ENVIRONMENT holds one variable: gtest_discover_tests flattens a list there, so only the
  # first of "A=1;B=2" reached the tests (the TSan suppressions never did). The tests find
  # HB_SOURCE_DIR / HB_BINARY_DIR without it (tests/testing/shared_data.cc).
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels}"
               ENVIRONMENT "TSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp:ignore_noninstrumented_modules=1")
endfunction()

function(hb_cc_test)
  cmake_parse_arguments(HB "STANDALONE" "NAME" "SRCS;DEPS;LABELS;NEEDS" ${ARGN})
  if(NOT HB_LABELS)
    set(HB_LABELS unit)
  endif()
  if(HB_STANDALONE OR NOT HB_TEST_GROUPS)
    hb_add_test_executable(${HB_NAME} "${HB_SRCS}" "${HB_DEPS}" "${HB_LABELS}" "${HB_NEEDS}" OFF)
    return()
  endif()
  string(REPLACE ";" "_" key "${HB_LABELS}")
  get_property(keys DIRECTORY PROPERTY HB_TEST_GROUP_KEYS)
  if(NOT keys)
    cmake_language(DEFER CALL hb_add_test_groups)
  endif()
  if(NOT key IN_LIST keys)
    set_property(DIRECTORY APPEND PROPERTY HB_TEST_GROUP_KEYS ${key})
    set_property(DIRECTORY PROPERTY HB_TEST_GROUP_${key}_LABELS ${HB_LABELS})
  endif()
  set_property(DIRECTORY APPEND PROPERTY HB_TEST_GROUP_${key}_SRCS ${HB_SRCS})
  set_property(DIRECTORY APPEND PROPERTY HB_TEST_GROUP_${key}_DEPS ${HB_DEPS})
  set_property(DIRECTORY APPEND PROPERTY HB_TEST_GROUP_${key}_NEEDS ${HB_NEEDS})
endfunction()

# Deferred to the end of a folder's CMakeLists.txt by its first hb_cc_test: one executable per
# label set of the folder (see hb_cc_test).
function(hb_add_test_groups)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR}/tests ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE "/" "_" folder "${folder}")
  get_property(keys DIRECTORY PROPERTY HB_TEST_GROUP_KEYS)
  foreach(key IN LISTS keys)
    get_property(srcs DIRECTORY PROPERTY HB_TEST_GROUP_${key}_SRCS)
    get_property(deps DIRECTORY PROPERTY HB_TEST_GROUP_${key}_DEPS)
    get_property(needs DIRECTORY PROPERTY HB_TEST_GROUP_${key}_NEEDS)
    list(REMOVE_DUPLICATES deps)
    if(needs)
      list(REMOVE_DUPLICATES needs)
    endif()
    set(name ${folder}_test)
    if(NOT key STREQUAL "unit")
      set(name ${folder}_${key}_test)
    endif()
    get_property(labels DIRECTORY PROPERTY HB_TEST_GROUP_${key}_LABELS)
    hb_add_test_executable(${name} "${srcs}" "${deps}" "${labels}" "${needs}" ${HB_PCH_ENABLED})
  endforeach()
endfunction()

# hb_cc_fuzzer(NAME grader_reply_fuzzer SRCS grader_reply_fuzzer.cc DEPS hb::grader_reply)
#   -> a libFuzzer executable (clang; HB_BUILD_FUZZERS=ON). Its corpus is fuzz/corpus/<NAME>/.
function(hb_cc_fuzzer)
  cmake_parse_arguments(HB "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${HB_NAME} ${HB_SRCS})
  target_link_libraries(${HB_NAME} PRIVATE ${HB_DEPS})
  target_compile_options(${HB_NAME} PRIVATE ${HB_WARNING_FLAGS} -fsanitize=fuzzer)
  target_link_options(${HB_NAME} PRIVATE -fsanitize=fuzzer)
endfunction()
