#!/bin/sh
# SPDX-License-Identifier: MIT
# Make sure the Debian packages the build and the tests need are installed.
# As root, install what is missing; otherwise say what to install.
set -e
need="gcc make libc6-dev libipt-dev libelf-dev libdw-dev libsqlite3-dev sqlite3 zlib1g-dev libdeflate-dev libiberty-dev liblzma-dev libcapstone-dev linux-perf binutils valgrind"
# clang and its runtimes (libFuzzer, ASan, UBSan) build the fuzz targets;
# clang-format is the format check CI runs; golang-go, bc, jq and python3
# are real programs the Valgrind backend is held to (tools/realprogs.sh);
# rustc and ocaml-nox build the programs whose runtimes unwind
# (59-runtimes.sh).
# dpkg-dev and debhelper build the package (make deb, and the test that
# builds it); man-db renders the manual pages in the tests.
[ "$1" = "--test" ] && need="$need protobuf-compiler g++ xz-utils clang libclang-rt-14-dev clang-format golang-go rustc ocaml-nox bc jq python3 dpkg-dev debhelper man-db"
[ "$1" = "--deb" ] && need="$need dpkg-dev debhelper"
# make static links with the static libraries of the -dev packages; the
# libbz2 and libzstd ones are what libdw's needs.
[ "$1" = "--static" ] && need="$need libbz2-dev libzstd-dev cmake"
missing=""
for p in $need; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "missing Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $missing >/dev/null
