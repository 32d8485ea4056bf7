#!/usr/bin/env python3
"""Lists the names the exported header's includes declare at global scope, one per line, sorted.

Run by the build: header_globals.py NVCC HOST_COMPILER INCLUDES OUT. It preprocesses INCLUDES
(tuner/export/runtime/header_includes.h) with nvcc, in its device pass and its host pass, and keeps
every identifier outside braces and parentheses: the names of the functions, variables, types and
namespaces declared there (threadIdx, printf, cudaMalloc, dim3, std), with the types they use. An
`extern "C" { ... }` block is global scope too; template parameter lists are skipped. `cm-tune
export` refuses a --namespace part that is one of them: the header would not compile, or its
kernels would find the namespace where they mean the global name. Without a working nvcc the list
is empty and the build warns: the other namespace rules still hold.
"""
import os
import re
import subprocess
import sys

TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_][A-Za-z0-9_]*|::|\S')


def global_names(text):
    names = set()
    braces = []          # per open brace: whether it is transparent (extern "C")
    parens = 0
    template_angles = 0  # inside a template parameter list
    previous = []
    for match in TOKEN.finditer(text):
        tok = match.group(0)
        if template_angles:
            if tok == "<":
                template_angles += 1
            elif tok == ">":
                template_angles -= 1
            continue
        if tok == "{":
            braces.append(previous[-2:] == ['extern', '"C"'] or previous[-1:] == ['"C"'])
        elif tok == "}":
            if braces:
                braces.pop()
        elif tok == "(":
            parens += 1
        elif tok == ")":
            parens = max(0, parens - 1)
        elif tok == "<" and previous[-1:] == ["template"]:
            template_angles = 1
        elif (parens == 0 and all(braces) and (tok[0].isalpha() or tok[0] == "_")
              and previous[-1:] != ["::"] and previous[-1:] != ["."] and previous[-1:] != ["->"]):
            names.add(tok)
        previous = (previous + [tok])[-2:]
    return names


def main():
    nvcc, host, includes, out = sys.argv[1:5]
    names = set()
    failed = ""
    if not nvcc or not os.path.exists(nvcc):
        failed = f"nvcc not found (NVCC='{nvcc}')"
    else:
        ccbin = ["-ccbin", host] if host else []
        # The host pass: nvcc's device-pass macros undefined, as header_macros.cmake does.
        host_pass = ["-Xcompiler", "-U__CUDA_ARCH__", "-Xcompiler", "-U__CUDA_ARCH_LIST__",
                     "-Xcompiler", "-UCUDA_DOUBLE_MATH_FUNCTIONS"]
        for extra in ([], host_pass):
            run = subprocess.run([nvcc, *ccbin, "-E", "-x", "cu", *extra, includes],
                                 capture_output=True, text=True, errors="replace")
            if run.returncode != 0:
                failed = f"{nvcc} -E failed ({run.returncode}): {run.stderr.strip()}"
                break
            lines = [l for l in run.stdout.splitlines() if not l.startswith("#")]
            names |= global_names("\n".join(lines))
    if failed:
        print("cm-tune: cannot list the global names of the exported header's includes, so export will not "
              f"refuse a --namespace that names one: {failed}", file=sys.stderr)
        names = set()
    # Names reserved to the implementation are refused by another rule; keywords by a third.
    kept = sorted(n for n in names if "__" not in n and not re.match(r"_[A-Z]", n))
    text = "".join(n + "\n" for n in kept)
    if not os.path.exists(out) or open(out).read() != text:
        with open(out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
