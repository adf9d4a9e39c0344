#!/bin/sh
# One lab host: a network namespace joined to the lab's bridge by a veth pair, and in it (with mount,
# UTS and PID namespaces of its own) an sshd under tini as the host's PID 1, its own hostname and
# /etc/hosts, private bind mounts over the directories the roles write; a Kafka node also gets a
# sparse file on a loop device as its unformatted data disk. Run by terraform/modules/lab.
#   host.sh up | down   (settings in the environment: LAB_DIR HOST NETNS ADDRESS PREFIX BRIDGE VETH
#                        DISK_GB PRIVATE_DIRS ETC_HOSTS ADMIN_USER BOOT_TIMEOUT_S)
# Every failure is one line starting with "lab:" on stderr.
set -eu
umask 022  # what the hosts read (/etc/hosts, the roots) must be readable by their service users

fail() { echo "lab: $*" >&2; exit 1; }

HOST_DIR="$LAB_DIR/hosts/$HOST"
SSH_OPTS="-o BatchMode=yes -o ConnectTimeout=3 -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$LAB_DIR/known_hosts -i $LAB_DIR/id_ed25519"

# A host is up when its sshd logs the admin in and sudo works: the path Ansible takes.
answers() {
    # shellcheck disable=SC2086
    [ "$(ssh $SSH_OPTS "$ADMIN_USER@$ADDRESS" 'sudo -n hostname' 2>/dev/null)" = "$HOST" ]
}

known_hosts() {  # add | remove this host's line; hosts start in parallel, hence the lock
    flock "$LAB_DIR/known_hosts.lock" sh -c '
        grep -v "^$1 " "$2" >"$2.tmp" 2>/dev/null || true
        [ "$3" = remove ] || echo "$1 $(cut -d" " -f1,2 "$4")" >>"$2.tmp"
        mv "$2.tmp" "$2"' known_hosts "$ADDRESS" "$LAB_DIR/known_hosts" "$1" "$HOST_DIR/ssh_host_ed25519_key.pub"
}

down() {
    if ip netns list | grep -qx "$NETNS\( (id: [0-9]*)\)\?"; then
        # Every process of the host (its init, sshd, what Ansible started): killing them ends its
        # mount and PID namespaces, and with them every mount made inside.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            pids=$(ip netns pids "$NETNS")
            [ -n "$pids" ] || break
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null || true
            sleep 0.5
        done
        [ -z "$(ip netns pids "$NETNS")" ] || fail "host $HOST: processes $(ip netns pids "$NETNS" | tr '\n' ' ')survive SIGKILL"
        ip netns del "$NETNS"
    fi
    ip link del "$VETH" 2>/dev/null || true
    # The flink role's cgroups of this host (streambed-<host>-<12 hex>: the host shares this machine's
    # cgroup file system), empty now that its processes are gone; deepest first.
    for group in /sys/fs/cgroup/streambed-"$HOST"-???????????? /sys/fs/cgroup/*/streambed-"$HOST"-????????????; do
        [ -d "$group" ] || continue
        find "$group" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    if [ -f "$HOST_DIR/disk.img" ]; then
        for dev in $(losetup --noheadings --output NAME --associated "$HOST_DIR/disk.img"); do
            losetup --detach "$dev"
        done
    fi
    if [ -f "$LAB_DIR/known_hosts" ]; then known_hosts remove; fi
    rm -rf "$HOST_DIR"
}

up() {
    if ip netns list | grep -qx "$NETNS\( (id: [0-9]*)\)\?" && answers; then
        return 0  # already up: nothing to change
    fi
    down  # a half-made host (an interrupted apply) is made again from nothing
    mkdir -p "$HOST_DIR/root"
    ssh-keygen -q -t ed25519 -N "" -C "$HOST" -f "$HOST_DIR/ssh_host_ed25519_key"
    printf '%s\n' "$ETC_HOSTS" >"$HOST_DIR/hosts"
    cat >"$HOST_DIR/sshd_config" <<EOF
ListenAddress $ADDRESS
Port 22
HostKey $HOST_DIR/ssh_host_ed25519_key
PidFile none
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers $ADMIN_USER
UsePAM no
MaxStartups 100:30:200
MaxSessions 50
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
    # PID 1 of the host's PID namespace: its name, its private directories, then tini reaping orphans
    # (daemons the roles start) with sshd as its child.
    cat >"$HOST_DIR/boot.sh" <<EOF
#!/bin/sh
set -eu
umask 022  # what the hosts read (/etc/hosts, the roots) must be readable by their service users
hostname '$HOST'
for d in $PRIVATE_DIRS; do
    mkdir -p "\$d" "$HOST_DIR/root\$d"
    chmod --reference="\$d" "$HOST_DIR/root\$d"  # /tmp stays 1777
    mount --bind "$HOST_DIR/root\$d" "\$d"
done
mount --bind '$HOST_DIR/hosts' /etc/hosts
mkdir -p /run/sshd
exec tini -s -- /usr/sbin/sshd -D -f '$HOST_DIR/sshd_config' -E '$HOST_DIR/sshd.log'
EOF
    ip netns add "$NETNS"
    ip link add "$VETH" type veth peer name eth0 netns "$NETNS"
    ip link set "$VETH" master "$BRIDGE" up
    ip -n "$NETNS" link set lo up
    ip -n "$NETNS" addr add "$ADDRESS/$PREFIX" dev eth0
    ip -n "$NETNS" link set eth0 up
    # No default route: the host reaches the lab's subnet and nothing else.
    if [ "$DISK_GB" -gt 0 ]; then
        truncate -s "${DISK_GB}G" "$HOST_DIR/disk.img"
        ln -sfn "$(losetup --find --show "$HOST_DIR/disk.img")" "$HOST_DIR/disk"
    fi
    known_hosts add
    setsid nsenter --net="/run/netns/$NETNS" unshare --mount --uts --pid --fork --mount-proc --propagation private \
        /bin/sh "$HOST_DIR/boot.sh" </dev/null >"$HOST_DIR/boot.log" 2>&1 &
    waited=0
    until answers; do
        if [ "$waited" -ge "$BOOT_TIMEOUT_S" ]; then
            why=$(cat "$HOST_DIR/boot.log" "$HOST_DIR/sshd.log" 2>/dev/null | grep . | head -n 1)
            fail "host $HOST ($ADDRESS) does not answer over SSH as $ADMIN_USER with sudo after ${BOOT_TIMEOUT_S} s${why:+: $why}"
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) fail "usage: host.sh up|down" ;;
esac
