#!/usr/bin/env bash
# Runs test_attack (issue 16: another local user against someone's store) with a real second user:
# as root it makes an attacker and a group member with useradd/groupadd and removes them afterwards,
# whatever happens (trap). Not root: the test runs the cases that need no other user and prints
# "skip NAME: not root" for the rest.
bin=${1:-build/test_attack}
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null; then exec "$bin"; fi
tag=$$
att=kcatt$tag mem=kcmem$tag grp=kcgrp$tag
cleanup() {
    userdel "$att" 2>/dev/null
    userdel "$mem" 2>/dev/null
    groupdel "$grp" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
groupadd "$grp" || { echo "skip test_attack: groupadd failed"; exec "$bin"; }
useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$att" &&
    useradd -M -N -d /nonexistent -s /usr/sbin/nologin -G "$grp" "$mem" || { echo "skip test_attack: useradd failed"; exec "$bin"; }
KT_ATTACKER=$att KT_MEMBER=$mem KT_GROUP=$grp "$bin"
