#!/usr/bin/env bash
# The two system packages some tests and CLIs use, installed only where this user may (root, or a working
# `sudo -n`): bash scripts/system_packages.sh (scripts/setup.sh calls it). Elsewhere it says what is missing,
# what that disables and the command to install it, and exits 0: the main job (scripts/main.sh) needs neither.
#   chromium      the browser tests (tests/browser.py: report pages in headless Chromium, driven by Playwright)
#   libjemalloc2  the evaluation CLIs' allocator (models/memory.py; without it they run on glibc's malloc)
# Found: chromium at $CHROMIUM_PATH or on PATH; jemalloc at $QASEM_JEMALLOC or where models/memory.py looks.
set -uo pipefail

missing=()
chromium="${CHROMIUM_PATH:-$(command -v chromium || true)}"
[[ -n "$chromium" && -x "$chromium" ]] || missing+=(chromium)
if [[ -n "${QASEM_JEMALLOC:-}" ]]; then
    [[ -f "$QASEM_JEMALLOC" ]] || missing+=(libjemalloc2)
else
    found=
    for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 \
               /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
        [[ -f "$lib" ]] && found=1
    done
    [[ -n "$found" ]] || missing+=(libjemalloc2)
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $EUID -eq 0 ]]; then
    as=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as=(sudo -n)
else
    as=(none)
fi

explain() {  # $1: why nothing was installed
    echo "system packages: ${missing[*]} missing, not installed ($1)."
    for p in "${missing[@]}"; do
        case $p in
            chromium) echo "  without chromium: the browser tests fail, naming it (tests/browser.py; CHROMIUM_PATH=... points at another build)" ;;
            libjemalloc2) echo "  without libjemalloc2: the evaluation CLIs run on glibc's malloc, with more resident memory on long runs (models/memory.py; QASEM_JEMALLOC=... points at another copy)" ;;
        esac
    done
    echo "  neither is needed by the main job (scripts/main.sh)."
    if command -v apt-get >/dev/null; then
        echo "  to install them: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
    else
        echo "  to install them: your system's package manager (Debian / Ubuntu: apt-get install -y ${missing[*]})"
    fi
}

if [[ "${as[*]}" == none ]]; then
    explain "not root, and no passwordless sudo" >&2
elif ! command -v apt-get >/dev/null; then
    explain "no apt-get here" >&2
elif ! { "${as[@]}" apt-get update -qq && "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; }; then
    explain "apt-get failed, see above" >&2
fi
exit 0
