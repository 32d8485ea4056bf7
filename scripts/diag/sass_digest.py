#!/usr/bin/env python3
"""Digest of the machine code of every kernel a preset holds, as the tuner compiles it.

Compiles the presets with `cm-tune compile` (NVRTC, the tuner's own options) into a scratch
database, then prints one line per candidate: template[params], the SHA-256 of the kernel's .text
section (its machine code, without line tables or other metadata) and its size in bytes. Two runs
that print the same lines compiled the same machine code, which is how a refactoring of the
templates shows that it changed nothing.

Usage: scripts/diag/sass_digest.py [--cm-tune BIN] [--arch sm_90] [--templates DIR] [--layout L]
                                   [--dtype D] PRESET...

--layout and --dtype go to `cm-tune compile` as they are (nn and f32 by default; `all` for every
layout or type), so the transposed and the FP64 and INT32 builds can be compared too.
"""
import argparse
import ctypes
import ctypes.util
import hashlib
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile


def unpack_cubin(stored):
    """The cubin a `binaries.cubin` blob holds: a zstd frame (cm-tune compresses cubins) decompressed,
    a cubin stored as it is (by an earlier cm-tune) unchanged."""
    if stored[:4] != b"\x28\xb5\x2f\xfd":
        return stored
    try:
        from compression import zstd  # Python 3.14
        return zstd.decompress(stored)
    except ImportError:
        pass
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    lib.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    size = lib.ZSTD_getFrameContentSize(stored, len(stored))
    if size >= 2**64 - 2:  # ZSTD_CONTENTSIZE_UNKNOWN, ZSTD_CONTENTSIZE_ERROR
        raise ValueError("damaged zstd frame header")
    out = ctypes.create_string_buffer(size)
    got = lib.ZSTD_decompress(out, size, stored, len(stored))
    if lib.ZSTD_isError(got) or got != size:
        raise ValueError("damaged zstd frame")
    return out.raw


def text_section(elf, name):
    """The bytes of section `name` of a 64-bit little-endian ELF image, or None."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 image")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)  # name, type, flags, addr, offset, size
    names_at = header(shstrndx)[4]
    for i in range(shnum):
        name_at, kind, _, _, offset, size = header(i)
        end = elf.index(b"\0", names_at + name_at)
        if elf[names_at + name_at:end].decode() == name and kind != 8:  # 8: SHT_NOBITS
            return elf[offset:offset + size]
    return None


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cm-tune", default=os.path.join(root, "build", "cm-tune"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--templates", help="templates folder (default: the built-in one)")
    parser.add_argument("--layout", help="layouts to compile, as `cm-tune compile --layout` (default nn)")
    parser.add_argument("--dtype", help="element types to compile, as `cm-tune compile --dtype` (default f32)")
    parser.add_argument("presets", nargs="+", help="preset names or TOML files")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        db = os.path.join(scratch, "digest.db")
        for preset in args.presets:
            command = [args.cm_tune, "--quiet", "--db", db]
            if args.templates:
                command += ["--templates", args.templates]
            command += ["compile", "--config", preset, "--arch", args.arch, "--json"]
            if args.layout:
                command += ["--layout", args.layout]
            if args.dtype:
                command += ["--dtype", args.dtype]
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                sys.exit(f"sass_digest: {' '.join(command)} failed:\n{done.stdout}")
        rows = sqlite3.connect(db).execute(
            "SELECT template_name, params, ok, lowered_name, cubin FROM binaries WHERE arch = ?", (args.arch,))
        lines = []
        for template, params, ok, lowered, cubin in rows:
            if not ok:
                lines.append(f"{template}[{params}] compile_error")
                continue
            code = text_section(unpack_cubin(bytes(cubin)), ".text." + lowered)
            if code is None:
                sys.exit(f"sass_digest: {template}[{params}]: no .text section for {lowered}")
            lines.append(f"{template}[{params}] {hashlib.sha256(code).hexdigest()[:16]} {len(code)}")
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main()
