#!/bin/sh
# Installs the Debian 12 packages nccltop needs to build and test.
# Run as root (`make deps`, `make test` and `make demo` run it for you as root;
# `make` alone never does: it only checks the build packages).
set -eu
PACKAGES="build-essential pkg-config libzmq3-dev libncurses-dev libcjson-dev libzstd-dev liblzma-dev \
libexpat1-dev libvterm-dev libmicrohttpd-dev prometheus clang-format clang libclang-rt-14-dev \
groff-base"
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: run as root: sudo apt-get install -y $PACKAGES" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $PACKAGES
