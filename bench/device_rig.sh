#!/bin/sh
# The rig's hosts (tests/support/netrig.py) on a machine without sshd or iproute2, such as
# the lent GPU machine (Ubuntu 24.04, root, network namespaces allowed, no network).
#
#   sh bench/device_rig.sh pack       # here, on Debian/Ubuntu with openssh-server and iproute2:
#                                     # their binaries and libraries into .dev/
#   sh bench/device_rig.sh install    # there: what is missing of them into /usr, the sshd
#                                     # user and /run/sshd; fails if a library is still missing
#
# `install` never replaces a file the machine has. Python's packages travel as wheels.
set -eu
case "${1:-}" in
pack)
    mkdir -p .dev/bin .dev/lib
    for b in /usr/sbin/sshd /usr/bin/ssh /usr/bin/ssh-keygen /usr/sbin/ip /usr/sbin/tc; do
        cp "$b" .dev/bin/
    done
    for b in .dev/bin/*; do ldd "$b" | awk '/=>/ { print $3 }'; done | sort -u |
        grep -v 'libc\.so\|libm\.so\|libresolv\|ld-linux' | while read -r lib; do cp -L "$lib" .dev/lib/; done
    ;;
install)
    for b in sshd ip tc; do [ -e /usr/sbin/$b ] || install -m 755 .dev/bin/$b /usr/sbin/$b; done
    for b in ssh ssh-keygen; do [ -e /usr/bin/$b ] || install -m 755 .dev/bin/$b /usr/bin/$b; done
    for lib in .dev/lib/*; do
        n=${lib##*/}
        [ -e /usr/lib/x86_64-linux-gnu/$n ] || [ -e /lib/x86_64-linux-gnu/$n ] ||
            cp "$lib" /usr/lib/x86_64-linux-gnu/
    done
    ldconfig
    id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd
    mkdir -p /run/sshd /etc/ssh
    for b in /usr/sbin/sshd /usr/bin/ssh /usr/sbin/ip; do
        if ldd "$b" | grep 'not found'; then echo "device_rig: $b lacks a library" >&2; exit 3; fi
    done
    ;;
*)
    echo "usage: sh bench/device_rig.sh pack|install" >&2
    exit 2
    ;;
esac
