# fuzz.cmake - the fuzz targets of fuzz/ (docs/testing.md, "Fuzzing"), included by the top
# CMakeLists.txt. Each fuzz/fuzz_<what>.c is a libFuzzer entry point over one parser, with its
# committed corpus in fuzz/corpus/<what>/.
#
#   Ordinary builds (gcc or clang): fuzz_<what> links fuzz/replay.c, a main() that runs files
#   and directories through the entry point once, and the test fuzz_<what>_replay replays the
#   whole corpus - under AddressSanitizer + UBSan in build-asan/.
#   HEARTH_LIBFUZZER=ON (clang only; `make fuzz` configures build-fuzz/ so): only the fuzz
#   targets are defined, each compiled from its own sources (src/base plus the parser) with
#   libFuzzer's coverage instrumentation and address + undefined sanitizers, and linked with
#   libFuzzer's main().
set(HEARTH_FUZZ_TARGETS gguf safetensors template tokenizer grammar)
file(GLOB _fuzz_base CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/base/*.c)
file(GLOB _fuzz_template CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/template/*.c)
file(GLOB _fuzz_tokenizer CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/tokenizer/*.c)
set(_fuzz_gguf ${CMAKE_SOURCE_DIR}/src/model/gguf.c ${CMAKE_SOURCE_DIR}/src/tensor/dtype.c)
set(_fuzz_safetensors ${CMAKE_SOURCE_DIR}/src/model/safetensors.c ${CMAKE_SOURCE_DIR}/src/tensor/dtype.c)
set(_fuzz_grammar ${CMAKE_SOURCE_DIR}/src/constrain/grammar.c ${CMAKE_SOURCE_DIR}/src/constrain/charset.c
    ${CMAKE_SOURCE_DIR}/src/constrain/regex.c ${CMAKE_SOURCE_DIR}/src/constrain/gbnf.c
    ${CMAKE_SOURCE_DIR}/src/constrain/matcher.c)

if(HEARTH_LIBFUZZER)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HEARTH_LIBFUZZER needs clang (CC=clang-14); gcc has no libFuzzer")
  endif()
  foreach(what ${HEARTH_FUZZ_TARGETS})
    add_executable(fuzz_${what} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${what}.c ${_fuzz_base} ${_fuzz_${what}})
    target_include_directories(fuzz_${what} PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(fuzz_${what} PRIVATE -g -O1 -fno-omit-frame-pointer
                           -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
    target_link_options(fuzz_${what} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${what} PRIVATE PkgConfig::PCRE2 PkgConfig::CJSON PkgConfig::UTF8PROC
                          PkgConfig::XXHASH Threads::Threads m)
  endforeach()
else()
  foreach(what ${HEARTH_FUZZ_TARGETS})
    set(name fuzz_${what}_replay)
    if(HEARTH_TESTS_ONLY AND NOT name MATCHES "${HEARTH_TESTS_ONLY}")
      continue()
    endif()
    add_executable(fuzz_${what} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${what}.c ${CMAKE_SOURCE_DIR}/fuzz/replay.c)
    target_link_libraries(fuzz_${what} PRIVATE hearth_core)
    add_test(NAME ${name} COMMAND fuzz_${what} fuzz/corpus/${what} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
