#!/bin/sh
# The README's two commands on a fresh Debian 12 machine, where even make may
# be missing: installs the build packages if make is not there (the Makefile
# installs the rest of what each target needs), then runs make with the
# arguments given.  Usage: sh tools/make.sh demo | test | ...
set -e
cd "$(dirname "$0")/.."
command -v make >/dev/null 2>&1 || sh tools/deps.sh build
exec make "$@"
