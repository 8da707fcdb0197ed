# CMake toolchain file: build any project with repocc as its C and C++
# compiler.
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=/path/to/repocc/config/repocc-toolchain.cmake ..
#
# repocc and repocc++ are looked up on PATH, then next to this file in a
# cargo build (../target/release). Set REPOCC_BIN_DIR to choose a folder.

set(_repocc_hints "$ENV{REPOCC_BIN_DIR}" "${CMAKE_CURRENT_LIST_DIR}/../target/release")
find_program(REPOCC_C_COMPILER NAMES repocc HINTS ${_repocc_hints} REQUIRED)
find_program(REPOCC_CXX_COMPILER NAMES repocc++ HINTS ${_repocc_hints})
if(NOT REPOCC_CXX_COMPILER)
  # A cargo build has only `repocc`; repocc++ is the same binary under a
  # name with "++" in it.
  get_filename_component(_repocc_dir "${REPOCC_C_COMPILER}" DIRECTORY)
  set(REPOCC_CXX_COMPILER "${_repocc_dir}/repocc++")
  if(NOT EXISTS "${REPOCC_CXX_COMPILER}")
    file(CREATE_LINK "${REPOCC_C_COMPILER}" "${REPOCC_CXX_COMPILER}" SYMBOLIC)
  endif()
endif()

set(CMAKE_C_COMPILER "${REPOCC_C_COMPILER}")
set(CMAKE_CXX_COMPILER "${REPOCC_CXX_COMPILER}")
