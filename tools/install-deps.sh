#!/bin/sh
# Installs the Debian packages kgen needs, only those that are missing.
# Lua side: luajit, lua5.4, busted, luacheck, argparse; C side: check,
# pkg-config; HIP compile checks: hipcc, libamdhip64-dev.
set -e
pkgs="luajit lua5.4 lua-busted lua-check lua-argparse check pkg-config hipcc libamdhip64-dev"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
