#!/bin/sh
# Regenerate vmlinux/vmlinux.h from the running kernel's BTF.
# The header is checked in so that a build needs no BTF on the build host;
# CO-RE relocations make the objects load on other kernels (see tests/vm).
set -eu
btf=${1:-/sys/kernel/btf/vmlinux}
out=${2:-$(dirname "$0")/../vmlinux/vmlinux.h}
[ -r "$btf" ] || { echo "gen-vmlinux: $btf is not readable; this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
bpftool btf dump file "$btf" format c > "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "gen-vmlinux: wrote $out from $btf ($(uname -r))"
