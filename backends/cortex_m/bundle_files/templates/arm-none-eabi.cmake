# CMake toolchain file: arm-none-eabi-gcc for bare-metal Cortex-M (written for this project).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
# The compiler check links no program: a bare-metal link needs our linker script and startup code.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
