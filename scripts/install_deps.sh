#!/usr/bin/env bash
# Installs the Debian packages that cross-compile bundles for Cortex-M and RISC-V and run them under QEMU:
# gcc-arm-none-eabi, libnewlib-arm-none-eabi, binutils-arm-none-eabi, qemu-system-arm (Cortex-M);
# gcc-riscv64-unknown-elf (with binutils-riscv64-unknown-elf), picolibc-riscv64-unknown-elf and
# qemu-system-misc, which has qemu-system-riscv32 (RISC-V); chromium, the headless browser the tests open each
# bundle's report.html in (tests/packager/test_report_html_browser.py).
# Installs only what is missing (running it twice is safe), non-interactively; runs apt-get as root or
# through sudo. Exits non-zero with a message naming what is missing when it cannot install it.
set -euo pipefail

PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi qemu-system-arm
          gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
          chromium)
# Programs the tests call, to check the installation worked (not only that dpkg says so).
PROGRAMS=(arm-none-eabi-gcc arm-none-eabi-size arm-none-eabi-nm arm-none-eabi-objdump qemu-system-arm
          riscv64-unknown-elf-gcc riscv64-unknown-elf-size riscv64-unknown-elf-readelf qemu-system-riscv32
          chromium)

fail() {
    echo "install_deps.sh: $*" >&2
    exit 1
}

missing_packages() {
    local package status
    for package in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
        if [[ $status != "install ok installed" ]]; then
            echo "$package"
        fi
    done
}

command -v dpkg-query >/dev/null 2>&1 || fail "not a Debian/Ubuntu system: install ${PACKAGES[*]} by hand"

mapfile -t missing < <(missing_packages)
if ((${#missing[@]} > 0)); then
    if [[ $(id -u) -eq 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        fail "need root (or sudo) to install: ${missing[*]}"
    fi
    echo "install_deps.sh: installing ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q \
        || fail "apt-get update failed"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || fail "apt-get install failed for: ${missing[*]}"
fi

mapfile -t still_missing < <(missing_packages)
((${#still_missing[@]} == 0)) || fail "still not installed: ${still_missing[*]}"
for program in "${PROGRAMS[@]}"; do
    command -v "$program" >/dev/null 2>&1 || fail "$program is not on PATH after installing ${PACKAGES[*]}"
done
echo "install_deps.sh: $(arm-none-eabi-gcc --version | head -n 1); $(riscv64-unknown-elf-gcc --version | head -n 1);" \
    "$(qemu-system-arm --version | head -n 1)"
