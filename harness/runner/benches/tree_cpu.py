#!/usr/bin/env python3
"""Runs a command and prints its wall time, the CPU time of its whole process tree and its own.

Usage: harness/runner/benches/tree_cpu.py COMMAND [ARG ...]

The command runs in a CPU-accounting cgroup of its own (cgroup v1's cpuacct controller under
/sys/fs/cgroup/cpuacct, as on the project's machine; root needed), so the tree's CPU time counts
every process it started, those inside bubblewrap's PID namespaces included: `/usr/bin/time`
counts only what each parent waited for, and `/proc/stat` the whole machine, other work included.
Kernel threads working for the run (a network namespace's teardown) are in neither. The command's
own CPU time (its process, all its threads, no child) is read from /proc/PID/stat once it has
exited and before it is reaped.

Run it with an interpreter that is not a version manager's shim (`/usr/bin/python3
harness/runner/benches/tree_cpu.py ...`): a shim (pyenv's) puts its own folders first on the
PATH, which the command inherits, and a run's shell commands see PATH (it is in the tool cache's
keys, so a cache written under one PATH does not answer a run under another).

Prints one line on standard error,
    tree_cpu: WALL s wall, CPU s cpu (USER user + SYS sys), own OWN s
and appends `WALL CPU USER SYS OWN` to the file $TREE_CPU_LOG when it is set. Exits with the
command's status.
"""

import os
import subprocess
import sys
import time

BASE = "/sys/fs/cgroup/cpuacct"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    if not os.access(BASE, os.W_OK):
        sys.exit(f"tree_cpu.py: {BASE} is not a writable cgroup v1 cpuacct hierarchy")
    cg = os.path.join(BASE, f"tree-cpu-{os.getpid()}")
    os.mkdir(cg)
    hz = os.sysconf("SC_CLK_TCK")

    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    t0 = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], preexec_fn=enter)
    # Exited, not yet reaped: its /proc entry still holds its own totals.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    with open(f"/proc/{child.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / hz
    status = child.wait()
    wall = time.monotonic() - t0
    with open(os.path.join(cg, "cpuacct.usage")) as f:
        cpu = int(f.read()) / 1e9
    with open(os.path.join(cg, "cpuacct.stat")) as f:
        stat = dict(line.split() for line in f)
    user, sys_ = int(stat["user"]) / hz, int(stat["system"]) / hz
    try:
        os.rmdir(cg)
    except OSError:
        pass
    print(
        f"tree_cpu: {wall:.3f} s wall, {cpu:.3f} s cpu ({user:.2f} user + {sys_:.2f} sys), "
        f"own {own:.2f} s",
        file=sys.stderr,
    )
    log = os.environ.get("TREE_CPU_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{wall:.3f} {cpu:.3f} {user:.2f} {sys_:.2f} {own:.2f}\n")
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
