#!/usr/bin/env python3
"""kt_race.py - drives a race for a test: runs a command and, the moment it opens a watched path,
stops it, runs an action (another user's move, say) and lets it go on.

    kt_race.py WATCH ACTION -- COMMAND...

WATCH is a file or directory; its first IN_OPEN (of the path itself, not of a name inside a
directory) is the trigger. The command is stopped (SIGSTOP) as soon as the event is read, ACTION
(a shell command) runs, then the command continues (SIGCONT). The command's own output passes
through and its exit status is this script's; "# race: action ran" or "# race: never triggered" is
printed on stderr. The watcher runs first in line (SCHED_FIFO, on the command's CPU) where it may,
so the command has not gone past its next system call when it is stopped: the action lands
between the open and what follows it on every run, not by chance."""
import ctypes
import os
import select
import signal
import struct
import subprocess
import sys

IN_OPEN = 0x20


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.stderr.write(__doc__)
        return 2
    watch, action, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    libc = ctypes.CDLL(None, use_errno=True)
    ifd = libc.inotify_init()
    if ifd < 0 or libc.inotify_add_watch(ifd, watch.encode(), IN_OPEN) < 0:
        sys.stderr.write("kt_race: inotify on %s: %s\n" % (watch, os.strerror(ctypes.get_errno())))
        return 2
    cpu = min(os.sched_getaffinity(0))
    try:
        os.sched_setaffinity(0, {cpu})
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        rt = True
    except (OSError, AttributeError):
        rt = False

    def child_setup():
        if rt:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    proc = subprocess.Popen(cmd, preexec_fn=child_setup)
    ran = False
    while proc.poll() is None and not ran:
        r, _, _ = select.select([ifd], [], [], 0.05)
        if not r:
            continue
        buf = os.read(ifd, 65536)
        off = 0
        while off < len(buf):
            _wd, mask, _cookie, nlen = struct.unpack_from("iIII", buf, off)
            name = buf[off + 16:off + 16 + nlen].rstrip(b"\0")
            off += 16 + nlen
            if mask & IN_OPEN and not name and not ran:
                try:
                    os.kill(proc.pid, signal.SIGSTOP)
                except ProcessLookupError:
                    break
                if rt:
                    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                subprocess.call(action, shell=True)
                os.kill(proc.pid, signal.SIGCONT)
                ran = True
    rc = proc.wait()
    sys.stderr.write("# race: %s\n" % ("action ran" if ran else "never triggered"))
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
