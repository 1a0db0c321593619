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
#
# The HTTP targets (HEARTH_FUZZ_HTTP_TARGETS: fuzz_http and one per API) drive the whole server
# in process (fuzz/http_harness.h), so they link the library - hearth_core in ordinary builds,
# hearth_fuzz_core (the same sources, instrumented, CPU only) under libFuzzer - behind
# fuzz/stub_engine.c, whose definitions of engine.h keep the library's engine out of the link.
set(HEARTH_FUZZ_TARGETS gguf safetensors template tokenizer grammar image audio)
set(HEARTH_FUZZ_HTTP_TARGETS http chat completions messages responses)
set(_fuzz_http_src ${CMAKE_SOURCE_DIR}/fuzz/http_harness.c ${CMAKE_SOURCE_DIR}/fuzz/stub_engine.c)
file(GLOB _fuzz_base CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/base/*.c)
file(GLOB _fuzz_template CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/template/*.c)
file(GLOB _fuzz_tokenizer CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/tokenizer/*.c)
set(_fuzz_gguf ${CMAKE_SOURCE_DIR}/src/model/gguf.c ${CMAKE_SOURCE_DIR}/src/tensor/dtype.c)
set(_fuzz_safetensors ${CMAKE_SOURCE_DIR}/src/model/safetensors.c ${CMAKE_SOURCE_DIR}/src/tensor/dtype.c)
set(_fuzz_grammar ${CMAKE_SOURCE_DIR}/src/constrain/grammar.c ${CMAKE_SOURCE_DIR}/src/constrain/charset.c
    ${CMAKE_SOURCE_DIR}/src/constrain/regex.c ${CMAKE_SOURCE_DIR}/src/constrain/gbnf.c
    ${CMAKE_SOURCE_DIR}/src/constrain/matcher.c)
set(_fuzz_image ${CMAKE_SOURCE_DIR}/src/server/image_decode.c)
set(_fuzz_audio ${CMAKE_SOURCE_DIR}/src/server/audio_decode.c ${CMAKE_SOURCE_DIR}/src/server/resample.c)

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
                          PkgConfig::XXHASH PkgConfig::PNG PkgConfig::JPEG PkgConfig::WEBP PkgConfig::SNDFILE
                          Threads::Threads m)
  endforeach()
  # HEARTH_CORE_SRC: every source of hearth_core (the top CMakeLists), here without the CUDA
  # backend. The numeric code (tensors, kernels, backends, forward passes: reached only through
  # model loading, never with request bytes) is compiled plainly, the rest instrumented.
  set(_fuzz_core_src ${HEARTH_CORE_SRC})
  list(FILTER _fuzz_core_src EXCLUDE REGEX "/src/backend/cuda/")
  list(APPEND _fuzz_core_src ${CMAKE_SOURCE_DIR}/src/backend/cuda_none.c)
  list(REMOVE_DUPLICATES _fuzz_core_src)
  set(_fuzz_numeric_src ${_fuzz_core_src})
  list(FILTER _fuzz_numeric_src INCLUDE REGEX "/src/(tensor|kernels|backend|models)/")
  list(FILTER _fuzz_core_src EXCLUDE REGEX "/src/(tensor|kernels|backend|models)/")
  add_library(hearth_fuzz_numeric STATIC ${_fuzz_numeric_src})
  target_include_directories(hearth_fuzz_numeric PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(hearth_fuzz_numeric PRIVATE -O1)
  # The tokenizer has a fuzz target of its own (fuzz_tokenizer, instrumented there); in the HTTP
  # targets it is checked by the sanitizers but gives no coverage feedback: BPE over a long
  # fuzzed prompt was half of their time, spent in comparison tracing.
  set(_fuzz_tok_src ${_fuzz_core_src})
  list(FILTER _fuzz_tok_src INCLUDE REGEX "/src/tokenizer/")
  list(FILTER _fuzz_core_src EXCLUDE REGEX "/src/tokenizer/")
  add_library(hearth_fuzz_tok OBJECT ${_fuzz_tok_src})
  target_include_directories(hearth_fuzz_tok PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(hearth_fuzz_tok PRIVATE -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
                         -fno-sanitize-recover=all)
  target_link_libraries(hearth_fuzz_tok PRIVATE PkgConfig::PCRE2 PkgConfig::CJSON PkgConfig::UTF8PROC PkgConfig::XXHASH)
  # The byte buffer and the JSON writer turn every reply into output, byte by byte: their branches
  # are counted, their comparisons not traced (that tracing was a tenth of the chat target's time).
  set(_fuzz_out_src ${CMAKE_SOURCE_DIR}/src/base/buf.c ${CMAKE_SOURCE_DIR}/src/server/json_out.c)
  list(REMOVE_ITEM _fuzz_core_src ${_fuzz_out_src})
  add_library(hearth_fuzz_out OBJECT ${_fuzz_out_src})
  target_include_directories(hearth_fuzz_out PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(hearth_fuzz_out PRIVATE -g -O1 -fno-omit-frame-pointer
                         -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                         -fno-sanitize-coverage=trace-cmp)
  target_link_libraries(hearth_fuzz_out PRIVATE PkgConfig::CJSON)
  add_library(hearth_fuzz_core STATIC ${_fuzz_core_src} $<TARGET_OBJECTS:hearth_fuzz_tok>
              $<TARGET_OBJECTS:hearth_fuzz_out>)
  target_include_directories(hearth_fuzz_core PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(hearth_fuzz_core PRIVATE -g -O1 -fno-omit-frame-pointer
                         -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
  # the two libraries call each other: the numeric one goes in twice
  target_link_libraries(hearth_fuzz_core PUBLIC hearth_fuzz_numeric PkgConfig::PCRE2 PkgConfig::CJSON PkgConfig::MHD
                        PkgConfig::CURL PkgConfig::SQLITE3 PkgConfig::CRYPTO PkgConfig::UTF8PROC PkgConfig::XXHASH
                        PkgConfig::PNG PkgConfig::JPEG PkgConfig::WEBP PkgConfig::SNDFILE Threads::Threads m)
  target_link_libraries(hearth_fuzz_numeric PUBLIC hearth_fuzz_core)
  # The harness and the stub engine are checked by the sanitizers but give no coverage: what the
  # fuzzer should steer by is the server's code, not the client's reading of its answers.
  add_library(hearth_fuzz_harness OBJECT ${_fuzz_http_src})
  target_include_directories(hearth_fuzz_harness PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(hearth_fuzz_harness PRIVATE -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
                         -fno-sanitize-recover=all)
  target_link_libraries(hearth_fuzz_harness PRIVATE PkgConfig::MHD PkgConfig::CJSON)
  foreach(what ${HEARTH_FUZZ_HTTP_TARGETS})
    add_executable(fuzz_${what} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${what}.c $<TARGET_OBJECTS:hearth_fuzz_harness>)
    target_include_directories(fuzz_${what} PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_options(fuzz_${what} PRIVATE -g -O1 -fno-omit-frame-pointer
                           -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
    target_link_options(fuzz_${what} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${what} PRIVATE hearth_fuzz_core)
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
  foreach(what ${HEARTH_FUZZ_HTTP_TARGETS})
    set(name fuzz_${what}_replay)
    if(HEARTH_TESTS_ONLY AND NOT name MATCHES "${HEARTH_TESTS_ONLY}")
      continue()
    endif()
    add_executable(fuzz_${what} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${what}.c ${_fuzz_http_src}
                   ${CMAKE_SOURCE_DIR}/fuzz/replay.c)
    target_include_directories(fuzz_${what} PRIVATE ${CMAKE_SOURCE_DIR})
    target_link_libraries(fuzz_${what} PRIVATE hearth_core)
    add_test(NAME ${name} COMMAND fuzz_${what} fuzz/corpus/${what} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
