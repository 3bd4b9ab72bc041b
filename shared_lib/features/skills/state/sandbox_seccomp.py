"""The seccomp-BPF filter the sandbox's child installs on itself (``sandbox_child``), before it
reads the skill's code. No library: ``ctypes`` and ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
&sock_fprog)`` with a program assembled here. Standard library only (the child imports it from
beside itself, never as a ``shared_lib`` module).

>>> program(1)[:3]
[(32, 0, 0, 4), (21, 1, 0, 3221225534), (6, 0, 0, 2147483648)]
"""

from __future__ import annotations

import ctypes
import os
import platform

# seccomp (x86_64 numbers): a deny list on top of the other walls (uid, read-only root,
# namespaces, rlimits). An allow list would be tighter but the set of calls an interpreter makes
# shifts with libc and Python versions; what is denied here is every call that makes a process,
# runs a program, opens a socket, changes mounts, namespaces, ids or the kernel, makes a device or
# a fifo, signals another process or reads another's memory. Another architecture is killed.
AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000
CLONE, CLONE3, KILL, TGKILL = 56, 435, 62, 234
CLONE_THREAD = 0x10000
DENIED = {
    41: "socket",
    42: "connect",
    43: "accept",
    49: "bind",
    50: "listen",
    53: "socketpair",
    288: "accept4",
    57: "fork",
    58: "vfork",
    59: "execve",
    322: "execveat",
    101: "ptrace",
    310: "process_vm_readv",
    311: "process_vm_writev",
    312: "kcmp",
    165: "mount",
    166: "umount2",
    155: "pivot_root",
    161: "chroot",
    272: "unshare",
    308: "setns",
    133: "mknod",
    259: "mknodat",
    200: "tkill",
    129: "rt_sigqueueinfo",
    297: "rt_tgsigqueueinfo",
    424: "pidfd_send_signal",
    434: "pidfd_open",
    438: "pidfd_getfd",
    248: "add_key",
    249: "request_key",
    250: "keyctl",
    321: "bpf",
    298: "perf_event_open",
    135: "personality",
    323: "userfaultfd",
    425: "io_uring_setup",
    426: "io_uring_enter",
    427: "io_uring_register",
    319: "memfd_create",
    447: "memfd_secret",
    303: "name_to_handle_at",
    304: "open_by_handle_at",
    428: "open_tree",
    429: "move_mount",
    430: "fsopen",
    431: "fsconfig",
    432: "fsmount",
    433: "fspick",
    442: "mount_setattr",
    105: "setuid",
    106: "setgid",
    113: "setreuid",
    114: "setregid",
    116: "setgroups",
    117: "setresuid",
    119: "setresgid",
    122: "setfsuid",
    123: "setfsgid",
    126: "capset",
    246: "kexec_load",
    320: "kexec_file_load",
    175: "init_module",
    313: "finit_module",
    176: "delete_module",
    169: "reboot",
    167: "swapon",
    168: "swapoff",
    103: "syslog",
    163: "acct",
    164: "settimeofday",
    227: "clock_settime",
    305: "clock_adjtime",
    159: "adjtimex",
    170: "sethostname",
    171: "setdomainname",
    172: "iopl",
    173: "ioperm",
    154: "modify_ldt",
    179: "quotactl",
    443: "quotactl_fd",
    212: "lookup_dcookie",
    153: "vhangup",
    134: "uselib",
    256: "migrate_pages",
    279: "move_pages",
    440: "process_madvise",
    112: "setsid",  # it stays in the process group the parent kills
    109: "setpgid",
    448: "process_mrelease",
    300: "fanotify_init",
}
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
EPERM, ENOSYS = 1, 38
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|…|K, BPF_RET|K


def program(own_pid: int) -> list[tuple[int, int, int, int]]:
    """The filter, as ``(code, jt, jf, k)`` BPF instructions over ``struct seccomp_data``
    (``nr`` at 0, ``arch`` at 4, ``args[0]`` at 16)."""
    deny = (_RET, 0, 0, RET_ERRNO | EPERM)
    rows = [
        (_LD, 0, 0, 4),
        (_JEQ, 1, 0, AUDIT_ARCH_X86_64),
        (_RET, 0, 0, RET_KILL_PROCESS),
        (_LD, 0, 0, 0),
        (_JGE, 0, 1, X32_BIT),  # the x32 numbers of the same calls
        deny,
        # clone: a thread only (CLONE_THREAD), never a process
        (_JEQ, 0, 4, CLONE),
        (_LD, 0, 0, 16),
        (_JSET, 0, 1, CLONE_THREAD),
        (_RET, 0, 0, RET_ALLOW),
        deny,
        # clone3's flags are behind a pointer: "not here", so libc falls back to clone
        (_JEQ, 0, 1, CLONE3),
        (_RET, 0, 0, RET_ERRNO | ENOSYS),
    ]
    for number in (KILL, TGKILL):  # a signal to itself only
        rows += [
            (_JEQ, 0, 4, number),
            (_LD, 0, 0, 16),
            (_JEQ, 0, 1, own_pid),
            (_RET, 0, 0, RET_ALLOW),
            deny,
        ]
    for number in sorted(DENIED):
        rows += [(_JEQ, 0, 1, number), deny]
    return [*rows, (_RET, 0, 0, RET_ALLOW)]


def install() -> None:
    """``PR_SET_NO_NEW_PRIVS`` then ``program`` on this process (``OSError`` if refused)."""
    if platform.machine() != "x86_64":
        raise OSError(f"the seccomp filter is for x86_64, not {platform.machine()}")

    class Instruction(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]

    rows = program(os.getpid())
    filters = (Instruction * len(rows))(*[Instruction(*row) for row in rows])
    fprog = Program(len(rows), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(38, 1, None, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS refused")
    if libc.prctl(22, 2, ctypes.cast(ctypes.byref(fprog), ctypes.c_void_p), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP refused")  # 22, 2: SECCOMP_MODE_FILTER
