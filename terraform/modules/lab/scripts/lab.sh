#!/bin/sh
# The lab's shared parts: what this machine must have, the bridge every host's veth joins, the admin
# user with its SSH key and passwordless sudo (as on a cloud image). Run by terraform/modules/lab.
#   lab.sh check | up | down     (settings in the environment: LAB_DIR BRIDGE BRIDGE_CIDR ADMIN_USER)
# Every failure is one line starting with "lab:" on stderr (streambed.infra.terraform shows it).
set -eu
umask 022  # what the hosts read (/etc/hosts, the roots) must be readable by their service users

fail() { echo "lab: $*" >&2; exit 1; }

check() {
    [ "$(id -u)" = 0 ] || fail "needs root (network namespaces, a bridge, loop devices): run as root"
    for tool in ip nsenter unshare losetup flock ssh ssh-keygen; do
        command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (iproute2, util-linux, openssh-client)"
    done
    for tool in sshd tini sudo; do
        command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
            fail "$tool is missing: make lab-packages installs openssh-server, sudo and tini"
    done
    probe="sblab-probe-$$"
    ip netns add "$probe" 2>/dev/null || fail "cannot create a network namespace (ip netns add) on this machine"
    ip netns del "$probe"
    unshare --mount --uts --pid --fork true 2>/dev/null ||
        fail "cannot create mount, UTS and PID namespaces (unshare) on this machine"
    [ -e /dev/loop-control ] || fail "no loop devices on this machine (/dev/loop-control is missing)"
}

# The admin user is shared by every lab on this machine (one /etc/passwd); each lab adds its key to
# authorized_keys with its directory as the comment, and the last lab to go removes the user.
MARK="streambed-lab"

up() {
    check
    mkdir -p "$LAB_DIR/hosts"
    chmod 700 "$LAB_DIR"
    [ -f "$LAB_DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C "$MARK:$LAB_DIR" -f "$LAB_DIR/id_ed25519"
    if ! id "$ADMIN_USER" >/dev/null 2>&1; then
        # '*': no password, yet not locked ('!'), which sshd without PAM would refuse.
        useradd --create-home --shell /bin/bash --comment "$MARK admin" --password '*' "$ADMIN_USER"
    fi
    home=$(getent passwd "$ADMIN_USER" | cut -d: -f6)
    install -d -m 700 -o "$ADMIN_USER" -g "$ADMIN_USER" "$home/.ssh"
    touch "$home/.ssh/authorized_keys"
    grep -qF "$MARK:$LAB_DIR" "$home/.ssh/authorized_keys" || cat "$LAB_DIR/id_ed25519.pub" >>"$home/.ssh/authorized_keys"
    chown "$ADMIN_USER:$ADMIN_USER" "$home/.ssh/authorized_keys"
    chmod 600 "$home/.ssh/authorized_keys"
    echo "$ADMIN_USER ALL=(ALL) NOPASSWD:ALL" >"/etc/sudoers.d/$MARK-$ADMIN_USER.tmp"
    chmod 440 "/etc/sudoers.d/$MARK-$ADMIN_USER.tmp"
    mv "/etc/sudoers.d/$MARK-$ADMIN_USER.tmp" "/etc/sudoers.d/$MARK-$ADMIN_USER"
    : >"$LAB_DIR/known_hosts"
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add "$BRIDGE" type bridge
    fi
    ip addr replace "$BRIDGE_CIDR" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

down() {
    ip link del "$BRIDGE" 2>/dev/null || true
    if id "$ADMIN_USER" >/dev/null 2>&1; then
        home=$(getent passwd "$ADMIN_USER" | cut -d: -f6)
        keys="$home/.ssh/authorized_keys"
        if [ -f "$keys" ]; then
            grep -vF "$MARK:$LAB_DIR" "$keys" >"$keys.tmp" || true
            mv "$keys.tmp" "$keys"
        fi
        # Only a user a lab created, and only once no lab's key is left in it.
        if getent passwd "$ADMIN_USER" | cut -d: -f5 | grep -qx "$MARK admin" && ! grep -qF "$MARK:" "$keys" 2>/dev/null; then
            userdel --remove "$ADMIN_USER" 2>/dev/null || userdel "$ADMIN_USER"
            rm -f "/etc/sudoers.d/$MARK-$ADMIN_USER"
        fi
    fi
    rm -rf "$LAB_DIR"
}

case "${1:-}" in
    check) check ;;
    up) up ;;
    down) down ;;
    *) fail "usage: lab.sh check|up|down" ;;
esac
