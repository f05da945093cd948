# `cmake --build <dir> --target qemu-test` (or qemu-profile, the profiling build): builds cortex_m/ with the
# arm-none-eabi toolchain as an external project and runs the self-test under QEMU with cortex_m/qemu-run.sh
# (no host capability; the build fails unless the self-test prints its PASS line and ends with exit status 0).
# Not part of `all`, so the host build needs no cross compiler. Include from the bundle's
# CMakeLists.txt: include(cortex_m/qemu-test.cmake)
include(ExternalProject)
ExternalProject_Add(cortex_m_selftest
    SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}
    BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/cortex_m
    CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    EXCLUDE_FROM_ALL ON)
foreach(board_target qemu-test qemu-profile)
    add_custom_target(${board_target}
        COMMAND ${CMAKE_COMMAND} --build ${CMAKE_CURRENT_BINARY_DIR}/cortex_m --target ${board_target}
        DEPENDS cortex_m_selftest
        USES_TERMINAL)
endforeach()
