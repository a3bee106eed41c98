"""The user tier's seccomp filter, compiled by libseccomp through ctypes: no socket but a Unix
one, and no io_uring, for the worker (docs/architecture.md, "The user tier's seccomp filter")."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import tempfile
from dataclasses import dataclass
from functools import cache

# libseccomp's actions (seccomp.h): allow, or fail the call with an errno.
ALLOW = 0x7FFF0000
ERRNO = 0x00050000
# Its comparison of an argument: "not equal" (enum scmp_compare).
CMP_NE = 1
# prctl(2) options.
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_NO_NEW_PRIVS = 22, 2, 38
REFUSED = ("io_uring_setup", "io_uring_enter", "io_uring_register")
# Opened here, in the parent: the forked child only calls into it.
_LIBC = ctypes.CDLL(None, use_errno=True)


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


class _Program(ctypes.Structure):
    """`struct sock_fprog`: the filter's instructions, 8 bytes each."""

    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


@dataclass(frozen=True)
class Filter:
    """A compiled filter, ready to install: its instructions kept alive beside the program
    that points at them."""

    code: ctypes.Array[ctypes.c_char]
    program: _Program

    def install(self) -> None:
        """In the worker's forked child, before exec: `no_new_privs`, then the filter. A
        failure raises, and the child never runs the worker unfiltered."""
        for args in (
            (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
            (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self.program), 0, 0),
        ):
            if _LIBC.prctl(*args):
                number = ctypes.get_errno()
                raise OSError(number, f"prctl({args[0]}): {os.strerror(number)}")


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp")
    if name is None:
        raise OSError("libseccomp is not installed (Debian/Ubuntu: libseccomp2)")
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_ArgCmp),
    )  # fmt: skip
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    return lib


def _check(result: int, what: str) -> None:
    if result < 0:
        raise OSError(-result, f"libseccomp: {what}: {os.strerror(-result)}")


@cache
def compiled() -> Filter:
    """The filter, compiled once per process; an OSError says why it cannot be."""
    lib = _library()
    context = lib.seccomp_init(ALLOW)
    if not context:
        raise OSError("libseccomp: seccomp_init failed")
    try:
        not_unix = (_ArgCmp * 1)(_ArgCmp(0, CMP_NE, socket.AF_UNIX, 0))
        number = lib.seccomp_syscall_resolve_name(b"socket")
        _check(lib.seccomp_rule_add_array(context, ERRNO | errno.EACCES, number, 1, not_unix),
               "socket")  # fmt: skip
        for name in REFUSED:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number >= 0:  # a kernel ABI without io_uring has nothing to refuse
                _check(lib.seccomp_rule_add_array(context, ERRNO | errno.ENOSYS, number, 0, None),
                       name)  # fmt: skip
        with tempfile.TemporaryFile() as out:
            _check(lib.seccomp_export_bpf(context, out.fileno()), "export")
            out.seek(0)
            data = out.read()
    finally:
        lib.seccomp_release(context)
    code = ctypes.create_string_buffer(data, len(data))
    return Filter(code, _Program(len(data) // 8, ctypes.addressof(code)))


def unavailable() -> str:
    """Why the filter cannot be had here, or "" when it can."""
    try:
        compiled()
    except OSError as error:
        return str(error)
    return ""
